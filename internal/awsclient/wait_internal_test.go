package awsclient

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// fakeS3 answers HeadBucket and GetBucketLifecycleConfiguration from scripted answers (the last one
// repeats); any other call panics on the nil S3API.
type fakeS3 struct {
	S3API
	exists    []bool // per HeadBucket call
	headErr   error
	lifecycle [][]s3types.LifecycleRule // per GetBucketLifecycleConfiguration call
	calls     int
}

func (f *fakeS3) HeadBucket(context.Context, *s3.HeadBucketInput, ...func(*s3.Options)) (*s3.HeadBucketOutput, error) {
	i := min(f.calls, len(f.exists)-1)
	f.calls++
	switch {
	case f.headErr != nil:
		return nil, f.headErr
	case f.exists[i]:
		return &s3.HeadBucketOutput{BucketRegion: aws.String("eu-west-1")}, nil
	default:
		return nil, &s3types.NotFound{}
	}
}

func (f *fakeS3) GetBucketLifecycleConfiguration(context.Context, *s3.GetBucketLifecycleConfigurationInput, ...func(*s3.Options)) (*s3.GetBucketLifecycleConfigurationOutput, error) {
	i := min(f.calls, len(f.lifecycle)-1)
	f.calls++
	return &s3.GetBucketLifecycleConfigurationOutput{Rules: f.lifecycle[i]}, nil
}

func TestWaitBucket(t *testing.T) {
	errDenied := errors.New("AccessDenied")
	tests := []struct {
		name      string
		deleted   bool // waitBucketDeleted, else waitBucketCreated
		api       *fakeS3
		wantCalls int
		wantSleep []time.Duration
		wantErr   func(error) bool
	}{
		{
			name: "created after two misses: delays grow", api: &fakeS3{exists: []bool{false, false, true}},
			wantCalls: 3, wantSleep: []time.Duration{200 * time.Millisecond, 400 * time.Millisecond},
			wantErr: func(err error) bool { return err == nil },
		},
		{
			name: "never created: a named timeout that is a deadline", api: &fakeS3{exists: []bool{false}},
			wantCalls: 4,
			wantErr: func(err error) bool {
				var te *wait.TimeoutError
				return errors.As(err, &te) && errors.Is(err, context.DeadlineExceeded) &&
					strings.Contains(err.Error(), `waiting for S3 bucket "b" to exist (last state: missing)`)
			},
		},
		{
			name: "deleted", deleted: true, api: &fakeS3{exists: []bool{true, false}},
			wantCalls: 2, wantSleep: []time.Duration{200 * time.Millisecond},
			wantErr: func(err error) bool { return err == nil },
		},
		{
			name: "an error other than not found ends the wait", api: &fakeS3{exists: []bool{false}, headErr: errDenied},
			wantCalls: 1,
			wantErr:   func(err error) bool { return errors.Is(err, errDenied) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := wait.NewStepClock(t0)
			waiter := waitBucketCreated
			if tt.deleted {
				waiter = waitBucketDeleted
			}
			err := waiter(context.Background(), tt.api, "b", time.Second, clock)
			if !tt.wantErr(err) {
				t.Fatalf("unexpected error: %v", err)
			}
			if tt.api.calls != tt.wantCalls {
				t.Errorf("HeadBucket called %d times, want %d", tt.api.calls, tt.wantCalls)
			}
			if tt.wantSleep != nil && !slices.Equal(clock.Sleeps, tt.wantSleep) {
				t.Errorf("slept %v, want %v", clock.Sleeps, tt.wantSleep)
			}
		})
	}
}

func TestWaitLifecyclePropagated(t *testing.T) {
	want := []archive.LifecycleRule{{ID: "wal", Enabled: true, Prefix: "wal/", ExpirationDays: 30}}
	written := lifecycleRuleToS3(want[0])
	api := &fakeS3{lifecycle: [][]s3types.LifecycleRule{nil, nil, {written}}}
	if err := waitLifecyclePropagated(context.Background(), api, "b", want, time.Minute, wait.NewStepClock(t0)); err != nil || api.calls != 3 {
		t.Fatalf("err %v after %d reads; want nil after 3", err, api.calls)
	}

	api = &fakeS3{lifecycle: [][]s3types.LifecycleRule{nil}}
	err := waitLifecyclePropagated(context.Background(), api, "b", want, time.Minute, wait.NewStepClock(t0))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "S3 still serves 0 rules") {
		t.Fatalf("got %v; want a timeout naming what S3 serves", err)
	}
}
