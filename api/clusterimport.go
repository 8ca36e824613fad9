package api

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// routeClusterImports registers many clusters of a provider in one request: a fleet of
// thousands is registered in seconds, where a request per cluster, its labels and its
// logical clouds' references (EMCO's only way) takes minutes.
const routeClusterImports = "/cluster-providers/:clusterProvider/cluster-imports"

// maxClusterImport bounds the clusters of one import (its body is bounded too).
const maxClusterImport = 1000

const clusterImportDoc = `Each cluster is checked as POST .../clusters checks it (its kubeconfig inline,
as text), and each label and logical cloud reference as theirs; then all of them are stored
together, or none is: a name that exists, a logical cloud that does not, or any invalid part
answers an error naming it and creates nothing.`

// clusterImport is the body of an import.
type clusterImport struct {
	Clusters []importedCluster `json:"clusters"`
}

// importedCluster is one cluster of an import: the resource POST .../clusters takes,
// its kubeconfig (unless it is reached through GitOps), its labels, and the logical
// clouds that reference it.
type importedCluster struct {
	model.Resource[model.ClusterSpec]
	Kubeconfig    string       `json:"kubeconfig,omitempty"`
	Labels        []string     `json:"labels,omitempty"`
	LogicalClouds []importedIn `json:"logicalClouds,omitempty"`
}

// importedIn is a logical cloud's reference to the imported cluster, named Reference
// (the cluster's name when empty).
type importedIn struct {
	Project      string `json:"project"`
	LogicalCloud string `json:"logicalCloud"`
	Reference    string `json:"reference,omitempty"`
}

// clusterImported answers an import: how many of each it created.
type clusterImported struct {
	Clusters          int `json:"clusters"`
	Labels            int `json:"labels"`
	ClusterReferences int `json:"clusterReferences"`
}

func (s *Server) importClusters(c echo.Context) error {
	coll, err := fill(c, routeClusters)
	if err != nil {
		return err
	}
	var body clusterImport
	if err := readJSON(c, &body); err != nil {
		return err
	}
	switch n := len(body.Clusters); {
	case n == 0:
		return badRequest("clusters is empty: an import names at least one cluster")
	case n > maxClusterImport:
		return badRequest("clusters has %d entries: an import takes %d at most; split it", n, maxClusterImport)
	}
	ctx := c.Request().Context()
	provider := parentOf(coll)
	if err := s.mustExist(ctx, provider); err != nil {
		return err
	}
	var docs []*store.Doc
	var out clusterImported
	for i, ic := range body.Clusters {
		cluster, err := s.importedCluster(c, coll, ic)
		if err != nil {
			return within(fmt.Sprintf("clusters[%d] (%q)", i, ic.Metadata.Name), err)
		}
		docs = append(docs, cluster)
		own, err := importedParts(ctx, c.Param("clusterProvider"), cluster, ic)
		if err != nil {
			return within(fmt.Sprintf("clusters[%d] (%q)", i, ic.Metadata.Name), err)
		}
		docs = append(docs, own...)
		out.Clusters++
		out.Labels += len(ic.Labels)
		out.ClusterReferences += len(ic.LogicalClouds)
	}
	if err := s.ownAll(ctx, docs); err != nil {
		return err
	}
	if err := s.Store.CreateMany(ctx, docs); err != nil {
		return fromStore(err)
	}
	return c.JSON(http.StatusCreated, out)
}

// importedCluster checks one cluster as a POST of it would, and returns its document.
func (s *Server) importedCluster(c echo.Context, coll string, ic importedCluster) (*store.Doc, error) {
	r := &request[model.ClusterSpec]{res: ic.Resource, parent: parentOf(coll), file: []byte(ic.Kubeconfig), hasFile: ic.Kubeconfig != ""}
	if err := r.res.Validate(); err != nil {
		return nil, badRequest("%v", err)
	}
	r.id = coll + "/" + r.res.Metadata.Name
	if err := validate(c.Request().Context(), s, clusterRes, r); err != nil {
		if !r.hasFile && !r.res.Spec.IsGitOps() && r.res.Spec.Access != model.AccessAgent {
			return nil, badRequest("kubeconfig is missing (the cluster's kubeconfig, as text)")
		}
		return nil, err
	}
	return r.doc(clusterRes)
}

// importedParts are the documents of a cluster's labels and logical clouds' references,
// each checked as its own POST would be.
func importedParts(ctx context.Context, provider string, cluster *store.Doc, ic importedCluster) ([]*store.Doc, error) {
	var docs []*store.Doc
	for i, l := range ic.Labels {
		if err := model.ValidateName(fmt.Sprintf("labels[%d]", i), l); err != nil {
			return nil, badRequest("%v", err)
		}
		if slices.Contains(ic.Labels[:i], l) {
			return nil, badRequest("labels[%d]: %q is given twice", i, l)
		}
		docs = append(docs, labelDoc(cluster.ID, l))
	}
	name := ic.Metadata.Name
	for i, in := range ic.LogicalClouds {
		for _, f := range []struct{ name, v string }{{"project", in.Project}, {"logicalCloud", in.LogicalCloud}} {
			if err := model.ValidateName(fmt.Sprintf("logicalClouds[%d].%s", i, f.name), f.v); err != nil {
				return nil, badRequest("%v", err)
			}
		}
		r := &request[model.ClusterReferenceSpec]{parent: lifecycle.LogicalCloudID(in.Project, in.LogicalCloud)}
		r.res.Metadata.Name = cmp.Or(in.Reference, name)
		r.res.Spec = model.ClusterReferenceSpec{ClusterProvider: provider, Cluster: name}
		if err := r.res.Validate(); err != nil {
			return nil, badRequest("logicalClouds[%d]: %v", i, err)
		}
		r.id = r.parent + "/cluster-references/" + r.res.Metadata.Name
		if err := checkClusterReference(ctx, nil, r); err != nil {
			return nil, err
		}
		d, err := r.doc(clusterRefKind)
		if err != nil {
			return nil, err
		}
		docs = append(docs, d)
	}
	return docs, nil
}

// within names where in the body an error's cause is.
func within(where string, err error) error {
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return httpErr(he.Code, "%s: %v", where, he.Message)
	}
	return err
}
