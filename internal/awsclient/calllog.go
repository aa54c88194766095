package awsclient

import (
	"context"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/hashicorp/terraform-plugin-log/tflog"
)

// CallLogMessage is the debug log's message for every AWS request the provider sends (each attempt, retries
// included): with TF_LOG_PROVIDER=DEBUG an operator sees which calls an apply or a refresh made, and
// `make bench` counts them.
const CallLogMessage = "aws request"

// logCalls adds the request log to every client built from cfg. It sits after the SDK's retry step, so a
// retried call logs each attempt.
func logCalls(cfg *aws.Config) {
	cfg.APIOptions = append(cfg.APIOptions, func(stack *middleware.Stack) error {
		return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("pgnvmeCallLog", logAttempt), middleware.After)
	})
}

func logAttempt(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
	out, md, err := next.HandleFinalize(ctx, in)
	fields := map[string]any{
		"service":   strings.ToLower(strings.ReplaceAll(awsmiddleware.GetServiceID(ctx), " ", "")),
		"operation": awsmiddleware.GetOperationName(ctx),
		"region":    awsmiddleware.GetRegion(ctx),
	}
	if resp, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response); ok && resp != nil {
		fields["status"] = resp.StatusCode
	}
	if err != nil {
		fields["error"] = err.Error()
	}
	tflog.Debug(ctx, CallLogMessage, fields)
	return out, md, err
}
