package awsclient_test

import (
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/awsclient"
)

// The operator's permissions are this package's calls: every operation its source makes (each SDK
// <Operation>Input it names, waiters and paginators included) is in OperatorCalls, and every operation
// listed there is made. A call added without its permission, or a permission left behind, fails here.
func TestOperatorCallsAreTheCallsMade(t *testing.T) {
	const sdk = "github.com/aws/aws-sdk-go-v2/service/"
	short := map[string]string{"elasticloadbalancingv2": "elbv2"}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	made := map[string][]string{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		services := map[string]string{} // the file's name of a service package -> the service
		for _, imp := range file.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			svc, ok := strings.CutPrefix(p, sdk)
			if !ok || strings.Contains(svc, "/") {
				continue
			}
			name := path.Base(p)
			if imp.Name != nil {
				name = imp.Name.Name
			}
			if s, ok := short[svc]; ok {
				svc = s
			}
			services[name] = svc
		}
		ast.Inspect(file, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			id, ok := sel.X.(*ast.Ident)
			op, isInput := strings.CutSuffix(sel.Sel.Name, "Input")
			if !ok || !isInput || services[id.Name] == "" || op == "" {
				return true
			}
			name := services[id.Name] + "." + op
			made[name] = append(made[name], fset.Position(sel.Pos()).String())
			return true
		})
	}
	listed := map[string]bool{}
	for _, c := range awsclient.OperatorCalls {
		if listed[c.Operation] {
			t.Errorf("%s is listed twice", c.Operation)
		}
		listed[c.Operation] = true
		if len(c.Actions) == 0 || c.Use == "" {
			t.Errorf("%s has no action or no use", c.Operation)
		}
		if _, ok := made[c.Operation]; !ok {
			t.Errorf("%s is listed in OperatorCalls but made nowhere in internal/awsclient: remove it", c.Operation)
		}
	}
	for _, op := range slices.Sorted(func(yield func(string) bool) {
		for k := range made {
			if !yield(k) {
				return
			}
		}
	}) {
		if !listed[op] {
			t.Errorf("%s is made (%s) but not in OperatorCalls: add it with its IAM actions", op, made[op][0])
		}
	}
	if len(made) < 90 {
		t.Errorf("only %d operations found: the scan is broken", len(made))
	}
	t.Logf("%d operations made, %d IAM actions in the operator's policy", len(made), len(awsclient.OperatorActions()))
}

// OperatorPolicy is a valid IAM policy document of every action, one statement per service.
func TestOperatorPolicy(t *testing.T) {
	var doc struct {
		Version   string
		Statement []struct {
			Sid, Effect, Resource string
			Action                []string
		}
	}
	if err := json.Unmarshal([]byte(awsclient.OperatorPolicy()), &doc); err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, s := range doc.Statement {
		if s.Effect != "Allow" || s.Resource != "*" || s.Sid == "" {
			t.Errorf("statement %+v", s)
		}
		for _, a := range s.Action {
			if svc, _, _ := strings.Cut(a, ":"); !strings.HasPrefix(s.Action[0], svc+":") {
				t.Errorf("statement %s mixes services: %v", s.Sid, s.Action)
			}
		}
		all = append(all, s.Action...)
	}
	slices.Sort(all)
	if doc.Version != "2012-10-17" || !slices.Equal(all, awsclient.OperatorActions()) {
		t.Errorf("the policy's actions %v are not OperatorActions %v", all, awsclient.OperatorActions())
	}
	for _, want := range []string{"ec2:RunInstances", "iam:PassRole", "ec2:CreateTags", "s3:ListBucket", "elasticloadbalancing:CreateLoadBalancer", "ssm:PutParameter"} {
		if !slices.Contains(all, want) {
			t.Errorf("the policy lacks %s", want)
		}
	}
}

// MissingPermission reads the action from AWS's refusals as each service words them; PermissionHint says
// what to do about it, and nothing for other errors.
func TestMissingPermission(t *testing.T) {
	for msg, want := range map[string]string{
		"api error UnauthorizedOperation: You are not authorized to perform this operation. User: arn:aws:iam::123456789012:user/ops is not authorized to perform: ec2:RunInstances on resource: arn:aws:ec2:eu-west-1:123456789012:instance/* because no identity-based policy allows the ec2:RunInstances action. Encoded authorization failure message: AbC": "ec2:RunInstances",
		"api error AccessDeniedException: User: arn:aws:sts::123456789012:assumed-role/ci/x is not authorized to perform: ssm:PutParameter on resource: arn:aws:ssm:eu-west-1:123456789012:parameter/pgnvme/orders/superuser because no identity-based policy allows the ssm:PutParameter action":                                                               "ssm:PutParameter",
		"api error AccessDenied: User: arn:aws:iam::123456789012:user/operator is not authorized to perform: elasticloadbalancing:CreateLoadBalancer":                                                                                                                                                                                                           "elasticloadbalancing:CreateLoadBalancer",
		"api error AccessDenied: User: arn:aws:iam::123456789012:user/ops is not authorized to perform: iam:PassRole on resource: arn:aws:iam::123456789012:role/pgnvme-orders":                                                                                                                                                                                 "iam:PassRole",
	} {
		got, ok := awsclient.MissingPermission(errors.New(msg))
		if !ok || got != want {
			t.Errorf("MissingPermission(%q) = %q, %v; want %s", msg, got, ok, want)
		}
		if hint := awsclient.PermissionHint(errors.New(msg)); !strings.Contains(hint, want) || !strings.Contains(hint, "aws-permissions") {
			t.Errorf("PermissionHint(%q) = %q", msg, hint)
		}
	}
	for _, err := range []error{nil, errors.New("api error AccessDenied: Access Denied"), errors.New("timeout")} {
		if got, ok := awsclient.MissingPermission(err); ok || awsclient.PermissionHint(err) != "" {
			t.Errorf("MissingPermission(%v) = %q, %v", err, got, ok)
		}
	}
}

// The permissions guide in templates/ is the one PermissionsGuide writes (make generate): the published
// policy is the list's.
func TestPermissionsGuideIsGenerated(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "templates", "guides", "aws-permissions.md.tmpl"))
	if err != nil {
		t.Fatalf("%v: run make generate", err)
	}
	if string(b) != awsclient.PermissionsGuide() {
		t.Error("templates/guides/aws-permissions.md.tmpl is not what awsclient.PermissionsGuide writes: run make generate and commit it")
	}
	if !strings.Contains(string(b), awsclient.OperatorPolicy()) {
		t.Error("the guide does not hold the operator's policy")
	}
}
