package workers

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/temco/temco/internal/core/lifecycle"
)

// EnsureSearchAttributes registers the lifecycle search attributes in the namespace when
// missing (idempotent); a frontend refusing it gets the command an operator can run.
func EnsureSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	list, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("list the search attributes of namespace %s: %w", namespace, err)
	}
	missing := map[string]enums.IndexedValueType{}
	var cmds []string
	for name := range lifecycle.SearchAttributeTypes() {
		if _, ok := list.GetCustomAttributes()[name]; !ok {
			missing[name] = enums.INDEXED_VALUE_TYPE_KEYWORD
			cmds = append(cmds, fmt.Sprintf("temporal operator search-attribute create --namespace %s --name %s --type Keyword", namespace, name))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if _, err := c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: namespace, SearchAttributes: missing}); err != nil {
		slices.Sort(cmds)
		return fmt.Errorf("register the search attributes (%w); register them once with:\n  %s", err, strings.Join(cmds, "\n  "))
	}
	return nil
}
