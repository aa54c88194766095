package awsclient

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
)

// SSM error codes the Cloud reacts to by name.
const (
	errCodeParameterAlreadyExists = "ParameterAlreadyExists"
	errCodeParameterNotFound      = "ParameterNotFound"
)

// parametersPerCall is the most names one DeleteParameters or GetParameters call accepts.
const parametersPerCall = 10

// getParameter reads a parameter's value; a missing one is ErrNotFound.
func (c *Cloud) getParameter(ctx context.Context, name string, decrypt bool) (string, error) {
	out, err := c.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name), WithDecryption: aws.Bool(decrypt)})
	if err != nil {
		return "", notFound(err, "SSM parameter "+name, "reading", errCodeParameterNotFound)
	}
	if out.Parameter == nil {
		return "", fmt.Errorf("reading SSM parameter %s: empty answer", name)
	}
	return aws.ToString(out.Parameter.Value), nil
}

// Parameter reads a plain SSM parameter (ErrNotFound when it does not exist).
func (c *Cloud) Parameter(ctx context.Context, name string) (string, error) {
	return c.getParameter(ctx, name, false)
}

// ExistingParameters are those of names that exist, in the order given, asked in batches of ten
// (ssm:GetParameters, without decryption: only whether they exist is read).
func (c *Cloud) ExistingParameters(ctx context.Context, names []string) ([]string, error) {
	found := map[string]bool{}
	for batch := range slices.Chunk(names, parametersPerCall) {
		out, err := c.ssm.GetParameters(ctx, &ssm.GetParametersInput{Names: batch, WithDecryption: aws.Bool(false)})
		if err != nil {
			return nil, fmt.Errorf("reading SSM parameters %v: %w", batch, err)
		}
		for _, p := range out.Parameters {
			found[aws.ToString(p.Name)] = true
		}
	}
	var out []string
	for _, n := range names {
		if found[n] {
			out = append(out, n)
		}
	}
	return out, nil
}

// Secret reads a SecureString, decrypted (ErrNotFound when it does not exist).
func (c *Cloud) Secret(ctx context.Context, name string) (string, error) {
	return c.getParameter(ctx, name, true)
}

// PutSecret creates the SecureString name with tags; when it exists already it keeps its value and tags.
func (c *Cloud) PutSecret(ctx context.Context, name, value string, tags map[string]string) error {
	in := &ssm.PutParameterInput{
		Name:      aws.String(name),
		Value:     aws.String(value),
		Type:      ssmtypes.ParameterTypeSecureString,
		Overwrite: aws.Bool(false),
		Tags:      ssmTags(tags),
	}
	if _, err := c.ssm.PutParameter(ctx, in); err != nil && !errCodeEquals(err, errCodeParameterAlreadyExists) {
		return fmt.Errorf("storing SSM parameter %s: %w", name, err)
	}
	return nil
}

// StoreSecret stores the SecureString name: created with tags, or its value overwritten (SSM takes no tags
// with an overwrite). For values the provider replaces, such as a node's certificates.
func (c *Cloud) StoreSecret(ctx context.Context, name, value string, tags map[string]string) error {
	return c.putParameter(ctx, name, value, ssmtypes.ParameterTypeSecureString, tags)
}

// DeleteSecrets deletes the parameters; names SSM does not know are ignored.
func (c *Cloud) DeleteSecrets(ctx context.Context, names []string) error {
	for batch := range slices.Chunk(names, parametersPerCall) {
		// Names that do not exist come back in InvalidParameters, not as an error.
		if _, err := c.ssm.DeleteParameters(ctx, &ssm.DeleteParametersInput{Names: batch}); err != nil {
			return fmt.Errorf("deleting SSM parameters %v: %w", batch, err)
		}
	}
	return nil
}

// PutParameter stores the plain String parameter name: created with tags, or its value overwritten (SSM
// takes no tags with an overwrite).
func (c *Cloud) PutParameter(ctx context.Context, name, value string, tags map[string]string) error {
	return c.putParameter(ctx, name, value, ssmtypes.ParameterTypeString, tags)
}

// standardParameterMax is the largest value a standard SSM parameter holds (an advanced one holds 8 KB).
const standardParameterMax = 4096

func (c *Cloud) putParameter(ctx context.Context, name, value string, typ ssmtypes.ParameterType, tags map[string]string) error {
	in := &ssm.PutParameterInput{
		Name: aws.String(name), Value: aws.String(value), Type: typ, Overwrite: aws.Bool(false),
		Tags: ssmTags(tags),
	}
	if len(value) > standardParameterMax {
		// A node's bundle with a long certificate chain (a subordinate ACM Private CA's): SSM makes it an
		// advanced parameter, and keeps it one when a later value would fit a standard one.
		in.Tier = ssmtypes.ParameterTierIntelligentTiering
	}
	_, err := c.ssm.PutParameter(ctx, in)
	if errCodeEquals(err, errCodeParameterAlreadyExists) {
		in.Tags, in.Overwrite = nil, aws.Bool(true)
		_, err = c.ssm.PutParameter(ctx, in)
	}
	if err != nil {
		return fmt.Errorf("storing SSM parameter %s: %w", name, err)
	}
	return nil
}
