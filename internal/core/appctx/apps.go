// A context's rendered apps: storing and reading them.

package appctx

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"golang.org/x/sync/errgroup"
)

// PutApps stores the rendered apps of a context, replacing those of an earlier attempt.
func (s *Store) PutApps(ctx context.Context, ctxID string, apps []*App) error {
	docs := make([]any, len(apps))
	for i, a := range apps {
		a.ID, a.Context = ctxID+"/"+a.Name, ctxID
		stored, err := s.sealApp(ctxID, a)
		if err != nil {
			return err
		}
		docs[i] = stored
	}
	return s.replaceAll(ctx, s.apps, ctxID, docs)
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
			err := s.apps.FindOne(ctx, bson.D{{Key: "_id", Value: ctxID + "/" + name}}).Decode(&a)
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
	if _, err := s.apps.BulkWrite(ctx, models); err != nil {
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
	_, err = s.apps.UpdateOne(ctx, bson.D{{Key: "_id", Value: ctxID + "/" + app}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "variants", Value: stored}}}})
	return err
}
