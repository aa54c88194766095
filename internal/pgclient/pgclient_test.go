package pgclient_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflogtest"
	"github.com/jackc/pgx/v5"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/pgfixture"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/quorum"
)

// lsnPattern is PostgreSQL's text form of a WAL position.
var lsnPattern = regexp.MustCompile(`^[0-9A-F]+/[0-9A-F]+$`)

// config returns a Config for user postgres on srv.
func config(srv *pgfixture.Server) pgclient.Config {
	return pgclient.Config{Host: "127.0.0.1", Port: srv.Port(), Database: "postgres", User: "postgres", SSLMode: "disable"}
}

// connect opens a Conn that the test closes at cleanup.
func connect(t *testing.T, cfg pgclient.Config) *pgclient.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgclient.Connect(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// applySetting runs ALTER SYSTEM SET, reloads, and waits until conn sees
// the value.
func applySetting(ctx context.Context, t *testing.T, conn *pgclient.Conn, name, value string) {
	t.Helper()
	if err := conn.AlterSystemSet(ctx, name, value); err != nil {
		t.Fatal(err)
	}
	if err := conn.ReloadConf(ctx); err != nil {
		t.Fatal(err)
	}
	if err := conn.WaitSetting(ctx, name, value, 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestServerFacts(t *testing.T) {
	srv := pgfixture.Start(t, pgfixture.Options{})
	conn := connect(t, config(srv))
	ctx := testContext(t)

	v, err := conn.ServerVersion(ctx)
	if err != nil || !strings.HasPrefix(v, strconv.Itoa(srv.Major)+".") {
		t.Errorf("ServerVersion = %q, %v; want %d.x", v, err, srv.Major)
	}
	n, err := conn.ServerVersionNum(ctx)
	if err != nil || n/10000 != srv.Major {
		t.Errorf("ServerVersionNum = %d, %v; want %dxxxx", n, err, srv.Major)
	}
	rec, err := conn.IsInRecovery(ctx)
	if err != nil || rec {
		t.Errorf("IsInRecovery = %v, %v; want false", rec, err)
	}
	if err := conn.RequirePrimary(ctx); err != nil {
		t.Errorf("RequirePrimary on a primary: %v", err)
	}
	if got, err := conn.Setting(ctx, "application_name"); err != nil || got != pgclient.DefaultApplicationName {
		t.Errorf("application_name = %q, %v; want %q", got, err, pgclient.DefaultApplicationName)
	}
	if want := fmt.Sprintf("127.0.0.1:%d/postgres", srv.Port()); conn.Target() != want {
		t.Errorf("Target = %q, want %q", conn.Target(), want)
	}
	_, err = conn.Setting(ctx, "no_such_parameter")
	if !pgclient.IsUnknownParameter(err) || !strings.Contains(err.Error(), `unrecognized configuration parameter "no_such_parameter"`) {
		t.Errorf("Setting(no_such_parameter) error = %v; want an unknown-parameter error", err)
	}

	a, err := conn.Archiver(ctx)
	if err != nil || a != (pgclient.Archiver{}) {
		t.Errorf("Archiver on a fresh server = %+v, %v; want zero", a, err)
	}
	lsn, err := conn.CurrentWALLSN(ctx)
	if err != nil || !lsnPattern.MatchString(lsn) {
		t.Errorf("CurrentWALLSN = %q, %v; want an LSN like 0/3000060", lsn, err)
	}
	standbys, err := conn.Standbys(ctx)
	if err != nil || len(standbys) != 0 {
		t.Errorf("Standbys on a lone primary = %+v, %v; want none", standbys, err)
	}
}

func TestAlterSystem(t *testing.T) {
	srv := pgfixture.Start(t, pgfixture.Options{})
	conn := connect(t, config(srv))
	ctx := testContext(t)
	const ssn = "synchronous_standby_names"

	// setAndWait applies one setting and waits for this session to see it.
	setAndWait := func(t *testing.T, name, value string) {
		t.Helper()
		applySetting(ctx, t, conn, name, value)
		if got := srv.Psql(t, "postgres", "SHOW "+name); got != value {
			t.Errorf("a new session shows %s = %q, want %q", name, got, value)
		}
	}

	t.Run("names are quoted identifiers", func(t *testing.T) {
		// Formatted into SQL as they are, these names would change work_mem or
		// synchronous_standby_names; quoted, PostgreSQL looks up the whole text
		// as one parameter name and finds none.
		for _, name := range []string{
			`work_mem = '1MB'; SELECT 1; --`,
			`synchronous_standby_names" = '*' --`,
			`work_mem TO DEFAULT`,
		} {
			err := conn.AlterSystemSet(ctx, name, "64MB")
			if !pgclient.IsUnknownParameter(err) {
				t.Errorf("AlterSystemSet(%q) error = %v; want an unknown-parameter error", name, err)
			}
			if err := conn.AlterSystemReset(ctx, name); !pgclient.IsUnknownParameter(err) {
				t.Errorf("AlterSystemReset(%q) error = %v; want an unknown-parameter error", name, err)
			}
		}
		if got := srv.Psql(t, "postgres", "SELECT count(*) FROM pg_file_settings WHERE sourcefile LIKE '%postgresql.auto.conf'"); got != "0" {
			t.Errorf("postgresql.auto.conf has %s settings, want 0", got)
		}
	})

	t.Run("quorum round-trips", func(t *testing.T) {
		value, err := quorum.Format(quorum.Spec{Method: quorum.MethodAny, Number: 1, Names: []string{"s 1", "s2"}})
		if err != nil {
			t.Fatal(err)
		}
		if value != `ANY 1 ("s 1", s2)` {
			t.Fatalf("Format = %q", value)
		}
		setAndWait(t, ssn, value)
		got, err := conn.Setting(ctx, ssn)
		if err != nil || got != value {
			t.Errorf("Setting = %q, %v; want %q", got, err, value)
		}
		spec, err := quorum.Parse(got)
		if err != nil || spec.Method != quorum.MethodAny || spec.Number != 1 || len(spec.Names) != 2 || spec.Names[0] != "s 1" {
			t.Errorf("Parse(%q) = %+v, %v", got, spec, err)
		}
	})

	t.Run("values with quotes and backslashes", func(t *testing.T) {
		value, err := quorum.Format(quorum.Spec{Method: quorum.MethodFirst, Number: 1, Names: []string{`it's`, `back\slash`, `x"y`}})
		if err != nil {
			t.Fatal(err)
		}
		setAndWait(t, ssn, value)
		// log_line_prefix takes any string and changes on reload.
		setAndWait(t, "log_line_prefix", `it's a "test" with \ and \\ and '' and E'\n' %m `)
	})

	t.Run("invalid value", func(t *testing.T) {
		err := conn.AlterSystemSet(ctx, ssn, "ANY (s1)")
		if !pgclient.IsInvalidParameterValue(err) || pgclient.SQLState(err) != "42601" {
			t.Fatalf("error = %v; want an invalid-value error", err)
		}
		for _, want := range []string{"ALTER SYSTEM SET synchronous_standby_names on 127.0.0.1:", `invalid value for parameter "synchronous_standby_names"`, "syntax error"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not contain %q", err, want)
			}
		}
		if err := conn.AlterSystemSet(ctx, ssn, "a\x00b"); err == nil || !strings.Contains(err.Error(), "NUL") {
			t.Errorf("value with NUL: error = %v", err)
		}
	})

	t.Run("reset", func(t *testing.T) {
		if err := conn.AlterSystemReset(ctx, ssn); err != nil {
			t.Fatal(err)
		}
		if err := conn.AlterSystemReset(ctx, "log_line_prefix"); err != nil {
			t.Fatal(err)
		}
		if err := conn.ReloadConf(ctx); err != nil {
			t.Fatal(err)
		}
		if err := conn.WaitSetting(ctx, ssn, "", 10*time.Second); err != nil {
			t.Fatal(err)
		}
		if got := srv.Psql(t, "postgres", "SELECT count(*) FROM pg_file_settings WHERE sourcefile LIKE '%postgresql.auto.conf'"); got != "0" {
			t.Errorf("postgresql.auto.conf has %s settings after reset, want 0", got)
		}
	})

	t.Run("wait times out naming the value", func(t *testing.T) {
		start := time.Now()
		err := conn.WaitSetting(ctx, "work_mem", "123MB", 300*time.Millisecond)
		if err == nil || !strings.Contains(err.Error(), `to become "123MB": it is still "4MB" after 300ms`) {
			t.Errorf("error = %v", err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("timeout of 300ms took %s", d)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := conn.WaitSetting(cctx, "work_mem", "123MB", time.Minute); err == nil {
			t.Error("WaitSetting with a cancelled context returned nil")
		}
	})
}

func TestSampleWaitEvents(t *testing.T) {
	srv := pgfixture.Start(t, pgfixture.Options{})
	conn := connect(t, config(srv))
	ctx := testContext(t)

	sleeper := rawConn(t, srv, "tf-acc-sleeper")
	done := make(chan error, 1)
	go func() {
		_, err := sleeper.Exec(ctx, "SELECT pg_sleep(2)")
		done <- err
	}()

	var got map[string]int64
	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		got, err = conn.SampleWaitEvents(ctx, "tf-acc-sleeper")
		if err != nil {
			t.Fatal(err)
		}
		if got["Timeout:PgSleep"] == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(got) != 1 || got["Timeout:PgSleep"] != 1 {
		t.Fatalf("SampleWaitEvents(tf-acc-sleeper) = %v, want map[Timeout:PgSleep:1]", got)
	}
	all, err := conn.SampleWaitEvents(ctx, "")
	if err != nil || all["Timeout:PgSleep"] != 1 {
		t.Errorf("SampleWaitEvents(\"\") = %v, %v; want Timeout:PgSleep counted", all, err)
	}
	none, err := conn.SampleWaitEvents(ctx, "tf-acc-nobody")
	if err != nil || len(none) != 0 {
		t.Errorf("SampleWaitEvents(tf-acc-nobody) = %v, %v; want empty", none, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// rawConn opens a plain pgx session named appName, for the test's own
// statements that pgclient has no method for.
func rawConn(t *testing.T, srv *pgfixture.Server, appName string) *pgx.Conn {
	t.Helper()
	return rawConnPort(t, srv.Port(), appName)
}

// rawConnPort is rawConn for the server on a port of 127.0.0.1.
func rawConnPort(t *testing.T, port int, appName string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=postgres sslmode=disable application_name=%s", port, appName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func TestConfigValidate(t *testing.T) {
	for _, mode := range pgclient.SSLModes {
		if err := (pgclient.Config{SSLMode: mode}).Validate(); err != nil {
			t.Errorf("sslmode %q: %v", mode, err)
		}
	}
	tests := []struct {
		name string
		cfg  pgclient.Config
		want string
	}{
		{"unknown sslmode", pgclient.Config{SSLMode: "bogus"}, `sslmode "bogus" is not supported: use one of disable, allow, prefer, require, verify-ca, verify-full`},
		{"sslmode case", pgclient.Config{SSLMode: "REQUIRE"}, `sslmode "REQUIRE" is not supported`},
		{"port", pgclient.Config{Port: 70000}, "port 70000 is out of range"},
		{"several hosts", pgclient.Config{Host: "a,b"}, "lists several hosts"},
		{"negative timeout", pgclient.Config{ConnectTimeout: -time.Second}, "negative"},
		{"NUL", pgclient.Config{Database: "a\x00b"}, "database contains a NUL byte"},
		{"certificate without key", pgclient.Config{SSLMode: "verify-full", SSLCert: "/c.crt"}, "give both sslcert and sslkey"},
		{"key without certificate", pgclient.Config{SSLMode: "verify-full", SSLKey: "/c.key"}, "give both sslcert and sslkey"},
		{"TLS files without TLS", pgclient.Config{SSLMode: "disable", SSLRootCert: "/ca.crt"}, "sslmode disable makes no TLS connection"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want %q", err, tt.want)
			}
			// Connect validates before dialling anything.
			_, err = pgclient.Connect(context.Background(), tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) || pgclient.IsConnectError(err) {
				t.Errorf("Connect() = %v, want %q", err, tt.want)
			}
		})
	}
	cfg := pgclient.Config{Host: "h", User: "u", Password: "s3cret-pw"}
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%v %+v %#v %s", cfg, cfg, cfg, cfg)} {
		if strings.Contains(s, "s3cret-pw") {
			t.Errorf("formatted Config shows the password: %s", s)
		}
	}
}

func TestConnectErrors(t *testing.T) {
	srv := pgfixture.Start(t, pgfixture.Options{})
	ctx := testContext(t)
	t.Setenv("PGPASSWORD", "")
	t.Setenv("PGPASSFILE", os.DevNull)

	t.Run("closed port", func(t *testing.T) {
		port := acctest.FreePorts(t, 1)[0]
		cfg := config(srv)
		cfg.Port = port
		_, err := pgclient.Connect(ctx, cfg)
		want := fmt.Sprintf("connecting to PostgreSQL at postgres@127.0.0.1:%d/postgres: ", port)
		if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "connection refused") || !pgclient.IsConnectError(err) {
			t.Errorf("error = %v; want it to start with %q and say connection refused", err, want)
		}
	})

	t.Run("ssl modes against a server without TLS", func(t *testing.T) {
		for _, mode := range []string{"disable", "allow", "prefer"} {
			cfg := config(srv)
			cfg.SSLMode = mode
			connect(t, cfg)
		}
		for _, mode := range []string{"require", "verify-ca", "verify-full"} {
			cfg := config(srv)
			cfg.SSLMode = mode
			_, err := pgclient.Connect(ctx, cfg)
			if err == nil || !strings.Contains(err.Error(), "TLS") {
				t.Errorf("sslmode %s: error = %v; want a TLS refusal", mode, err)
			}
		}
	})

	t.Run("quoted connection values", func(t *testing.T) {
		db := `tf-acc db 'x' \y`
		app := `tf-acc app 'q' \z`
		srv.Psql(t, "postgres", `CREATE DATABASE "tf-acc db 'x' \y"`)
		cfg := config(srv)
		cfg.Database, cfg.ApplicationName = db, app
		conn := connect(t, cfg)
		if got, err := conn.Setting(ctx, "application_name"); err != nil || got != app {
			t.Errorf("application_name = %q, %v; want %q", got, err, app)
		}
		got := srv.Psql(t, "postgres", `SELECT datname FROM pg_stat_activity WHERE application_name = 'tf-acc app ''q'' \z'`)
		if got != db {
			t.Errorf("session is in database %q, want %q", got, db)
		}
	})

	t.Run("passwords", func(t *testing.T) {
		const user, right, wrong = "tf_acc_pw", `r'ight \pw`, "wrong-s3cret"
		srv.Psql(t, "postgres", `CREATE ROLE tf_acc_pw LOGIN PASSWORD 'r''ight \pw'`)
		hba := srv.Psql(t, "postgres", "SHOW hba_file")
		old, err := os.ReadFile(hba)
		if err != nil {
			t.Fatal(err)
		}
		line := "host all " + user + " 127.0.0.1/32 scram-sha-256\n"
		if err := srv.Engine.WriteFileOwned(hba, append([]byte(line), old...), 0o600); err != nil {
			t.Fatal(err)
		}
		srv.Psql(t, "postgres", "SELECT pg_reload_conf()")

		cfg := config(srv)
		cfg.User = user
		// The postmaster rereads pg_hba.conf asynchronously: wait until the
		// wrong password is refused.
		cfg.Password = wrong
		deadline := time.Now().Add(10 * time.Second)
		for {
			conn, err := pgclient.Connect(ctx, cfg)
			if err != nil {
				want := fmt.Sprintf(`connecting to PostgreSQL at tf_acc_pw@127.0.0.1:%d/postgres: FATAL: password authentication failed for user "tf_acc_pw" (SQLSTATE 28P01)`, srv.Port())
				if err.Error() != want || !pgclient.IsAuthenticationFailed(err) {
					t.Errorf("wrong password: error = %q, want %q", err, want)
				}
				break
			}
			_ = conn.Close(ctx)
			if time.Now().After(deadline) {
				t.Fatal("pg_hba.conf change did not take effect in 10s")
			}
			time.Sleep(50 * time.Millisecond)
		}

		cfg.Password = right
		connect(t, cfg)

		cfg.Password = ""
		_, err = pgclient.Connect(ctx, cfg)
		if err == nil || !strings.Contains(err.Error(), "no password was given (set one, or PGPASSWORD)") {
			t.Errorf("no password: error = %v", err)
		}
		t.Setenv("PGPASSWORD", right)
		connect(t, cfg)
		// An explicit password wins over PGPASSWORD.
		cfg.Password = wrong
		_, err = pgclient.Connect(ctx, cfg)
		if !pgclient.IsAuthenticationFailed(err) {
			t.Errorf("explicit wrong password with PGPASSWORD set: error = %v", err)
		}
		if err != nil && (strings.Contains(err.Error(), wrong) || strings.Contains(err.Error(), right)) {
			t.Errorf("error shows a password: %v", err)
		}
	})
}

func TestErrorClassifiers(t *testing.T) {
	if pgclient.IsReadOnlyStandby(nil) || pgclient.IsUnknownParameter(errors.New("x")) || pgclient.SQLState(nil) != "" {
		t.Error("classifiers match errors that did not come from PostgreSQL")
	}
}

// TLS as a server that takes TLS 1.3 only and clients by certificate sees it: with verify-full, the
// server's authority and the client's certificate, the session is TLS (pg_stat_ssl: version, cipher, the
// client certificate's name); without the client certificate, against another authority, or without TLS,
// the server or the client refuses, and the error says which.
func TestTLS(t *testing.T) {
	tp := acctest.StartTLSPostgres(t)
	ctx := testContext(t)
	t.Setenv("PGSSLROOTCERT", "")
	t.Setenv("PGSSLCERT", "")
	t.Setenv("PGSSLKEY", "")
	base := pgclient.Config{Host: "127.0.0.1", Port: tp.Server.Port(), Database: "postgres", User: "postgres", SSLMode: "verify-full",
		SSLRootCert: tp.CAFile, SSLCert: tp.ClientCert, SSLKey: tp.ClientKey}
	conn := connect(t, base)
	row, err := conn.QueryText(ctx, "SELECT concat_ws('|', ssl, version, cipher, client_dn) FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Split(row, "|")
	if len(f) != 4 || f[0] != "t" || f[1] != "TLSv1.3" || f[2] == "" || f[3] != "/O=pgnvme/CN=postgres" {
		t.Errorf("pg_stat_ssl: %q; want true, TLSv1.3, a cipher and the client certificate's name", row)
	}
	t.Logf("TLS session (ssl|version|cipher|client): %s", row)
	// The same with the authority and the client's certificate in memory (the provider's own login).
	pair, err := tls.LoadX509KeyPair(tp.ClientCert, tp.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(tp.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	mem := base
	mem.SSLRootCert, mem.SSLCert, mem.SSLKey, mem.RootCAs, mem.ClientCert = "", "", "", roots, &pair
	if got, err := connect(t, mem).QueryText(ctx, "SELECT client_dn FROM pg_stat_ssl WHERE pid = pg_backend_pid()"); err != nil || got != "/O=pgnvme/CN=postgres" {
		t.Errorf("a session with the certificate in memory: client_dn %q, %v", got, err)
	}
	if err := (pgclient.Config{Host: "h", SSLMode: "prefer", ClientCert: &pair}).Validate(); err == nil {
		t.Error("a client certificate in memory with sslmode prefer: want an error")
	}
	for _, tc := range []struct {
		name string
		edit func(*pgclient.Config)
		want string
	}{
		{"no client certificate", func(c *pgclient.Config) { c.SSLCert, c.SSLKey = "", "" }, "certificate"},
		{"another authority", func(c *pgclient.Config) { c.SSLRootCert = tp.OtherCAFile }, "certificate signed by unknown authority"},
		{"no TLS", func(c *pgclient.Config) { c.SSLMode, c.SSLRootCert, c.SSLCert, c.SSLKey = "disable", "", "", "" }, "no encryption"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			tc.edit(&cfg)
			c, err := pgclient.Connect(ctx, cfg)
			if err == nil {
				_ = c.Close(ctx)
				t.Fatalf("connected with %s", cfg)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q lacks %q", err, tc.want)
			}
		})
	}
}

// Every session opened, or refused, is one debug line (pgclient.SessionLogMessage) naming its target,
// never the password.
func TestConnect_logsSessions(t *testing.T) {
	srv := pgfixture.Start(t, pgfixture.Options{})
	var logged bytes.Buffer
	ctx := tflogtest.RootLogger(testContext(t), &logged)
	c := config(srv)
	conn, err := pgclient.Connect(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	c.Port, c.Password = acctest.FreePorts(t, 1)[0], "secret-pw"
	if _, err := pgclient.Connect(ctx, c); err == nil {
		t.Fatal("a session to a port nobody listens on opened")
	}
	entries, err := tflogtest.MultilineJSONDecode(&logged)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		if e["@message"] == pgclient.SessionLogMessage {
			got = append(got, fmt.Sprint(e["target"], " error:", e["error"] != nil))
		}
	}
	want := []string{fmt.Sprintf("postgres@127.0.0.1:%d/postgres error:false", srv.Port()), fmt.Sprintf("postgres@127.0.0.1:%d/postgres error:true", c.Port)}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("logged %q, want %q", got, want)
	}
	if strings.Contains(logged.String(), "secret-pw") {
		t.Error("the log holds the password")
	}
}

// The role EnsureMonitorRole makes (the provider's login on a cluster with TLS) reads everything the
// provider reads of a cluster, and nothing a superuser alone may do; made twice, it is made once.
func TestEnsureMonitorRole(t *testing.T) {
	srv := pgfixture.Start(t, pgfixture.Options{})
	ctx := testContext(t)
	admin := connect(t, config(srv))
	for range 2 {
		if err := admin.EnsureMonitorRole(ctx, "pgnvme"); err != nil {
			t.Fatal(err)
		}
	}
	cfg := config(srv)
	cfg.User = "pgnvme"
	c := connect(t, cfg)
	if _, err := c.WALPosition(ctx); err != nil {
		t.Errorf("WALPosition as the monitor role: %v", err)
	}
	if _, err := c.ArchiverFailures(ctx); err != nil {
		t.Errorf("ArchiverFailures as the monitor role: %v", err)
	}
	if _, err := c.RecoveryEnd(ctx); err != nil {
		t.Errorf("RecoveryEnd as the monitor role: %v", err)
	}
	if _, err := c.SettingContexts(ctx, []string{"shared_buffers"}); err != nil {
		t.Errorf("SettingContexts as the monitor role: %v", err)
	}
	if v, err := c.Setting(ctx, "synchronous_standby_names"); err != nil {
		t.Errorf("synchronous_standby_names as the monitor role: %q, %v", v, err)
	}
	if super, err := c.CheckTrue(ctx, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user"); err != nil || super {
		t.Errorf("the monitor role is a superuser (%v, %v)", super, err)
	}
	if err := c.AlterSystemSet(ctx, "work_mem", "8MB"); !pgclient.IsInsufficientPrivilege(err) {
		t.Errorf("ALTER SYSTEM as the monitor role: %v; want insufficient privilege", err)
	}
}
