package awsclient

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// Classifying and retrying AWS API errors, for every service the adapter calls. The error codes each
// service's files react to are named there.

// errorCode returns the AWS error code of err ("" when err is not an API error).
func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// errCodeEquals reports whether err is an AWS API error with one of codes.
func errCodeEquals(err error, codes ...string) bool {
	if err == nil {
		return false
	}
	return slices.Contains(codes, errorCode(err))
}

// errMessageContains reports whether err is an AWS API error with code and a message containing part.
func errMessageContains(err error, code, part string) bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return false
	}
	return ae.ErrorCode() == code && strings.Contains(ae.ErrorMessage(), part)
}

// httpStatus returns the HTTP status code of the response that produced err (0 when unknown).
func httpStatus(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// notFound wraps err as ErrNotFound for what when its code is one of codes; otherwise it wraps err as the
// failure of doing.
func notFound(err error, what, doing string, codes ...string) error {
	if errCodeEquals(err, codes...) {
		return fmt.Errorf("%s: %w (%w)", what, ErrNotFound, err)
	}
	return fmt.Errorf("%s %s: %w", doing, what, err)
}

// retryWhen calls fn until it succeeds or fails with an error retryable does not accept, for at most timeout
// on clock (then the last error comes back as it came, so callers still classify it), as the AWS provider's
// tfresource.RetryWhen. Delays grow from wait.DefaultMinInterval to wait.DefaultMaxInterval.
func retryWhen[T any](ctx context.Context, clock wait.Clock, timeout time.Duration, retryable func(error) bool, fn func(context.Context) (T, error)) (T, error) {
	return wait.Retry(ctx, "the AWS call to succeed (retrying eventual-consistency errors)", timeout, clock, retryable, fn)
}

// retryWhenCode is retryWhen for a list of named AWS error codes (tfresource.RetryWhenAWSErrCodeEquals).
func retryWhenCode[T any](ctx context.Context, clock wait.Clock, timeout time.Duration, fn func(context.Context) (T, error), codes ...string) (T, error) {
	what := fmt.Sprintf("the AWS call to succeed (retrying %s)", strings.Join(codes, ", "))
	return wait.Retry(ctx, what, timeout, clock, func(err error) bool { return errCodeEquals(err, codes...) }, fn)
}
