package monitor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"k8s.io/client-go/openapi"

	"github.com/temco/temco/internal/adapters/gitops"
	"github.com/temco/temco/internal/core/capabilities"
)

// schemaDoc is one OpenAPI v3 document as last fetched.
type schemaDoc struct {
	sum  string // sha256, hex
	body []byte
}

// factFiles reads the cluster's facts and returns them as the files of its facts
// directory. An OpenAPI document is fetched only when the server's index names a new one
// (its URL carries a hash of the document).
func (m *Monitor) factFiles(ctx context.Context) (map[string][]byte, error) {
	caps, err := capabilities.Discover(m.disco)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.Cluster, err)
	}
	paths, err := openapi.ToClientWithContext(m.disco.OpenAPIV3()).PathsWithContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the OpenAPI index of %s: %w", m.Cluster, err)
	}
	facts := gitops.Facts{KubeVersion: caps.KubeVersion, APIVersions: caps.APIVersions, Schemas: map[string]string{}}
	docs := make(map[string]schemaDoc, len(paths))
	files := map[string][]byte{}
	for path, gv := range paths {
		url := gv.(openapi.GroupVersion).ServerRelativeURL()
		d, ok := m.docs[url]
		if !ok {
			body, err := gv.SchemaWithContext(ctx, "application/json")
			if err != nil {
				return nil, fmt.Errorf("read the OpenAPI schema %s of %s: %w", path, m.Cluster, err)
			}
			sum := sha256.Sum256(body)
			d = schemaDoc{sum: hex.EncodeToString(sum[:]), body: body}
		}
		docs[url] = d
		facts.Schemas[path] = d.sum
		files[gitops.SchemaPath(m.Cluster, d.sum)] = d.body
	}
	m.docs = docs
	b, err := json.MarshalIndent(facts, "", "  ")
	if err != nil {
		return nil, err
	}
	files[gitops.FactsPath(m.Cluster)] = append(b, '\n')
	return files, nil
}
