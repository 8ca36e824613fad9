// A context's rendered apps: storing and reading them.

package appctx

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"golang.org/x/sync/errgroup"

	"github.com/temco/temco/internal/core/store"
)

// PutApps stores the rendered apps of a context, replacing those it has (an earlier
// attempt's, or the same apps rewritten: image pinning), holding the claim on the
// context's apps.
func (s *Store) PutApps(ctx context.Context, ctxID string, apps []*App) error {
	docs := make([]any, len(apps))
	ids := make(bson.A, len(apps))
	for i, a := range apps {
		a.ID, a.Context = ctxID+"/"+a.Name, ctxID
		stored, err := s.sealApp(ctxID, a)
		if err != nil {
			return err
		}
		docs[i], ids[i] = stored, a.ID
	}
	return s.writeApps(ctx, ctxID, func(ctx context.Context) error {
		err := insertChunks(ctx, s.apps, docs)
		if !mongo.IsDuplicateKeyError(err) {
			return err
		}
		// The context has apps: each is replaced in place and only then are those it no
		// longer has deleted, so that a writer stopped at any point leaves every app, old or
		// new, for its next attempt to complete. Never a context without its apps.
		if err := s.appsStep(stepInserted); err != nil {
			return err
		}
		if err := replaceChunks(ctx, s.apps, docs); err != nil {
			return fmt.Errorf("replace the apps of context %s: %w", ctxID, err)
		}
		if err := s.appsStep(stepReplaced); err != nil {
			return err
		}
		_, err = s.apps.DeleteMany(ctx, bson.D{{Key: "ctx", Value: ctxID}, {Key: "_id", Value: bson.D{{Key: "$nin", Value: ids}}}})
		return err
	})
}

// The steps of a replacement of a context's apps, after which a test may stop it.
const (
	stepInserted = "inserted" // the new apps inserted, the others still old
	stepReplaced = "replaced" // every app new, those no longer listed still there
)

// appsStep runs the test hook, if any, after a step of PutApps.
func (s *Store) appsStep(step string) error {
	if s.afterAppsStep == nil {
		return nil
	}
	return s.afterAppsStep(step)
}

// writeApps runs write holding the claim on the context's apps, as every other context
// document is written: of two writers of them at once (a retried activity and the attempt
// it replaced), one waits for the other, so that neither undoes half of the other's.
func (s *Store) writeApps(ctx context.Context, ctxID string, write func(ctx context.Context) error) error {
	return s.exclusive(ctx, s.apps, ctxID, write)
}

// replaceChunks replaces documents by _id, inserting those missing.
func replaceChunks(ctx context.Context, c *mongo.Collection, docs []any) error {
	models := make([]mongo.WriteModel, len(docs))
	for i, d := range docs {
		models[i] = mongo.NewReplaceOneModel().SetFilter(bson.D{{Key: "_id", Value: d.(*App).ID}}).SetReplacement(d).SetUpsert(true)
	}
	return bulkChunks(ctx, c, models)
}

// bulkChunks runs writes in commands of at most 50: FerretDB (SQLite) never answered an
// update command of 100 updates, where it answered one of 99 in 0.4 s.
func bulkChunks(ctx context.Context, c *mongo.Collection, models []mongo.WriteModel) error {
	const chunk = 50
	for i := 0; i < len(models); i += chunk {
		if _, err := c.BulkWrite(ctx, models[i:min(i+chunk, len(models))]); err != nil {
			return err
		}
	}
	return nil
}

// Apps returns the rendered apps of a context (those its header lists), by name.
func (s *Store) Apps(ctx context.Context, c *Context) (map[string]*App, error) {
	apps, err := s.rendered(ctx, c.ID, c.Apps)
	if err == nil && len(apps) < len(c.Apps) {
		err = fmt.Errorf("context %s: some of its apps %v are not rendered", c.ID, c.Apps)
	}
	return apps, err
}

// rendered reads the named rendered apps of a context, by name; one not rendered (yet) is
// left out.
func (s *Store) rendered(ctx context.Context, ctxID string, names []string) (map[string]*App, error) {
	apps := make([]*App, len(names))
	var g errgroup.Group
	for i, name := range names {
		g.Go(func() error {
			var a App
			err := store.FindOne(ctx, s.apps, bson.D{{Key: "_id", Value: ctxID + "/" + name}}, &a)
			if errors.Is(err, mongo.ErrNoDocuments) {
				return nil
			}
			if err == nil {
				err = s.openApp(ctxID, name, &a)
			}
			if err != nil {
				return fmt.Errorf("rendered app %s of context %s: %w", name, ctxID, err)
			}
			apps[i] = &a
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out := make(map[string]*App, len(apps))
	for _, a := range apps {
		if a != nil {
			out[a.Name] = a
		}
	}
	return out, nil
}

// AddApps stores apps controllers added (replacing an earlier attempt's), then makes the
// header list order, which has them: the apps first, so that the header never names an app
// without its document.
func (s *Store) AddApps(ctx context.Context, ctxID string, apps []*App, order []string) error {
	models := make([]mongo.WriteModel, len(apps))
	for i, a := range apps {
		a.ID, a.Context = ctxID+"/"+a.Name, ctxID
		stored, err := s.sealApp(ctxID, a)
		if err != nil {
			return err
		}
		models[i] = mongo.NewReplaceOneModel().SetFilter(bson.D{{Key: "_id", Value: a.ID}}).SetReplacement(stored).SetUpsert(true)
	}
	err := s.writeApps(ctx, ctxID, func(ctx context.Context) error { return bulkChunks(ctx, s.apps, models) })
	if err != nil {
		return fmt.Errorf("store the added apps of context %s: %w", ctxID, err)
	}
	return s.Set(ctx, ctxID, bson.D{{Key: "apps", Value: order}})
}

// SetVariants records an app's objects rendered for other capabilities, by their key.
func (s *Store) SetVariants(ctx context.Context, ctxID, app string, variants map[string][]Object) error {
	stored, err := s.sealVariants(ctxID, app, variants)
	if err != nil {
		return err
	}
	return s.writeApps(ctx, ctxID, func(ctx context.Context) error {
		_, err := s.apps.UpdateOne(ctx, bson.D{{Key: "_id", Value: ctxID + "/" + app}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "variants", Value: stored}}}})
		return err
	})
}
