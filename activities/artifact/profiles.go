package artifact

import (
	"context"
	"fmt"
	"strings"

	"github.com/temco/temco/internal/core/artifact"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// reference is an artifact a context needs, by its key among the context's artifacts: an
// app's name for its chart, artifact.ProfileKey(app) for its profile's archive.
type reference struct {
	key string
	src artifact.Source
}

// profileReferences are the app profiles of the composite profile that name their archive
// by reference.
func (a *Activities) profileReferences(ctx context.Context, compositeProfile string) ([]reference, error) {
	docs, err := a.Store.List(ctx, store.Query{Parent: compositeProfile, Kind: model.KindAppProfile})
	if err != nil {
		return nil, err
	}
	var out []reference
	for _, d := range docs {
		r, err := model.Decode[model.AppProfileSpec](d.Body)
		if err != nil {
			return nil, err
		}
		if r.Spec.Archive != nil {
			out = append(out, reference{artifact.ProfileKey(r.Spec.App), *r.Spec.Archive})
		}
	}
	return out, nil
}

// describeKey names an artifact by its key, for messages: `app "web": chart` or
// `app "web": profile`.
func describeKey(key string) string {
	if app, ok := strings.CutPrefix(key, artifact.ProfileKey("")); ok {
		return fmt.Sprintf("app %q: profile", app)
	}
	return fmt.Sprintf("app %q: chart", key)
}
