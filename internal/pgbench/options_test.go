package pgbench_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgbench"
)

// validOptions is a run that passes Validate; cases change one thing.
func validOptions() pgbench.Options {
	return pgbench.Options{
		Host: "127.0.0.1", Port: 5432, User: "postgres", Database: "bench",
		Builtin: pgbench.BuiltinTPCBLike, Scale: 1, Clients: 8, Threads: 2,
		DurationSeconds: 30, Protocol: pgbench.ProtocolSimple,
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(o *pgbench.Options)
		want   []string // substrings of the error; none for a valid run
	}{
		{"valid builtin", func(*pgbench.Options) {}, nil},
		{"valid script with transactions and rate", func(o *pgbench.Options) {
			o.Builtin, o.ScriptPath = "", "/tmp/talk.sql"
			o.DurationSeconds, o.Transactions = 0, 100
			o.Rate, o.ProgressSeconds, o.LogPrefix = 500.5, 1, "/tmp/log/pgbench"
		}, nil},
		{"valid threads equal clients, default protocol, libpq defaults", func(o *pgbench.Options) {
			o.Threads, o.Protocol = o.Clients, ""
			o.Host, o.Port, o.User, o.Database = "", 0, "", ""
		}, nil},
		{"both builtin and script", func(o *pgbench.Options) { o.ScriptPath = "/tmp/talk.sql" },
			[]string{`both a built-in script ("tpcb-like") and a custom script file ("/tmp/talk.sql") are set: set only one of them`}},
		{"neither builtin nor script", func(o *pgbench.Options) { o.Builtin = "" },
			[]string{"neither a built-in script nor a custom script file is set: set one of them (built-in scripts: tpcb-like, simple-update, select-only)"}},
		{"unknown builtin", func(o *pgbench.Options) { o.Builtin = "tpcb" },
			[]string{`unknown built-in script "tpcb": use one of tpcb-like, simple-update, select-only`}},
		{"both duration and transactions", func(o *pgbench.Options) { o.Transactions = 10 },
			[]string{"both a duration (30 s) and a number of transactions per client (10) are set: set only one of them"}},
		{"neither duration nor transactions", func(o *pgbench.Options) { o.DurationSeconds = 0 },
			[]string{"neither a duration nor a number of transactions per client is set: set one of them above 0"}},
		{"negative duration", func(o *pgbench.Options) { o.DurationSeconds = -1 },
			[]string{"the duration is -1 seconds"}},
		{"negative transactions", func(o *pgbench.Options) { o.DurationSeconds, o.Transactions = 0, -5 },
			[]string{"the number of transactions is -5"}},
		{"clients 0", func(o *pgbench.Options) { o.Clients, o.Threads = 0, 1 },
			[]string{"the number of clients is 0: set at least 1 client"}},
		{"threads 0", func(o *pgbench.Options) { o.Threads = 0 },
			[]string{"the number of threads is 0: set at least 1 thread"}},
		{"threads above clients", func(o *pgbench.Options) { o.Clients, o.Threads = 2, 4 },
			[]string{"the number of threads (4) is above the number of clients (2): set at most 2 threads, or more clients"}},
		{"scale 0", func(o *pgbench.Options) { o.Scale = 0 },
			[]string{"the scale is 0: set a scale of at least 1"}},
		{"unknown protocol", func(o *pgbench.Options) { o.Protocol = "copy" },
			[]string{`unknown protocol "copy": use one of simple, extended, prepared`}},
		{"negative rate", func(o *pgbench.Options) { o.Rate = -1 },
			[]string{"the rate is -1 transactions per second: set a rate above 0, or 0 to run unthrottled"}},
		{"NaN rate", func(o *pgbench.Options) { o.Rate = math.NaN() },
			[]string{"the rate is NaN transactions per second"}},
		{"negative progress", func(o *pgbench.Options) { o.ProgressSeconds = -1 },
			[]string{"the progress interval is -1 seconds"}},
		{"port out of range", func(o *pgbench.Options) { o.Port = 70000 },
			[]string{"the port is 70000: set a port from 1 to 65535, or 0 for libpq's default"}},
		{"database like an option", func(o *pgbench.Options) { o.Database = "-i" },
			[]string{`the database name "-i" begins with "-"`}},
		{"every problem reported", func(o *pgbench.Options) {
			o.Builtin, o.DurationSeconds, o.Clients, o.Threads, o.Protocol = "", 0, 0, 0, "x"
		}, []string{"neither a built-in script", "neither a duration", "clients is 0", "threads is 0", `unknown protocol "x"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := validOptions()
			tt.change(&o)
			err := o.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestInitArgs(t *testing.T) {
	tests := []struct {
		name string
		o    pgbench.Options
		want []string
	}{
		{"full connection", validOptions(), []string{
			"--initialize", "--scale=1", "--quiet", "--host=127.0.0.1", "--port=5432", "--username=postgres", "bench"}},
		{"libpq defaults", pgbench.Options{Scale: 1000}, []string{"--initialize", "--scale=1000", "--quiet"}},
		{"socket directory and connection string", pgbench.Options{
			Host: "/var/run/postgresql", Scale: 50, Database: "dbname=bench sslmode=disable",
		}, []string{"--initialize", "--scale=50", "--quiet", "--host=/var/run/postgresql", "dbname=bench sslmode=disable"}},
	}
	for _, tt := range tests {
		if got := pgbench.InitArgs(tt.o); !slices.Equal(got, tt.want) {
			t.Errorf("%s: InitArgs() = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestRunArgs(t *testing.T) {
	conn := []string{"--host=127.0.0.1", "--port=5432", "--username=postgres", "bench"}
	tests := []struct {
		name   string
		change func(o *pgbench.Options)
		want   []string
	}{
		{"builtin for a duration, pgbench vacuums", func(*pgbench.Options) {}, append([]string{
			"--client=8", "--jobs=2", "--time=30", "--protocol=simple", "--scale=1", "--builtin=tpcb-like"}, conn...)},
		{"select-only prepared, throttled, progress", func(o *pgbench.Options) {
			o.Builtin, o.Protocol, o.Rate, o.ProgressSeconds = pgbench.BuiltinSelectOnly, pgbench.ProtocolPrepared, 200, 5
		}, append([]string{"--client=8", "--jobs=2", "--time=30", "--protocol=prepared", "--scale=1",
			"--rate=200", "--progress=5", "--builtin=select-only"}, conn...)},
		{"custom script: transactions, fractional rate, log, no vacuum", func(o *pgbench.Options) {
			o.Builtin, o.ScriptPath = "", "/tmp/pgbench-1/script.sql"
			o.DurationSeconds, o.Transactions = 0, 1000
			o.Scale, o.Clients, o.Threads = 100, 64, 16
			o.Protocol, o.Rate, o.ProgressSeconds = pgbench.ProtocolExtended, 0.5, 1
			o.LogPrefix = "/tmp/pgbench-1/log/pgbench"
		}, append([]string{"--client=64", "--jobs=16", "--transactions=1000", "--protocol=extended", "--scale=100",
			"--rate=0.5", "--progress=1", "--log", "--log-prefix=/tmp/pgbench-1/log/pgbench",
			"--no-vacuum", "--file=/tmp/pgbench-1/script.sql"}, conn...)},
		{"script path with @ gets an explicit weight", func(o *pgbench.Options) {
			o.Builtin, o.ScriptPath = "", "/tmp/a@b/script.sql"
		}, append([]string{"--client=8", "--jobs=2", "--time=30", "--protocol=simple", "--scale=1",
			"--no-vacuum", "--file=/tmp/a@b/script.sql@1"}, conn...)},
		{"default protocol and libpq defaults", func(o *pgbench.Options) {
			o.Protocol, o.Builtin = "", pgbench.BuiltinSimpleUpdate
			o.Host, o.Port, o.User, o.Database = "", 0, "", ""
			o.Clients, o.Threads = 1, 1
		}, []string{"--client=1", "--jobs=1", "--time=30", "--protocol=simple", "--scale=1", "--builtin=simple-update"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := validOptions()
			tt.change(&o)
			if err := o.Validate(); err != nil {
				t.Fatalf("the case's options are invalid: %v", err)
			}
			if got := pgbench.RunArgs(o); !slices.Equal(got, tt.want) {
				t.Errorf("RunArgs() =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestTalkScriptMatchesCapture(t *testing.T) {
	if got := readTestdata(t, "talk.sql"); got != pgbench.TalkScript {
		t.Errorf("testdata/talk.sql = %q, want TalkScript %q", got, pgbench.TalkScript)
	}
}

func TestBuiltinsAndProtocols(t *testing.T) {
	if pgbench.Builtins[0] != pgbench.BuiltinTPCBLike || len(pgbench.Builtins) != 3 {
		t.Errorf("Builtins = %q, want tpcb-like first of 3", pgbench.Builtins)
	}
	if pgbench.Protocols[0] != pgbench.ProtocolSimple || len(pgbench.Protocols) != 3 {
		t.Errorf("Protocols = %q, want simple first of 3", pgbench.Protocols)
	}
}
