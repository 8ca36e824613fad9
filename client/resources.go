package client

import (
	"context"
	"net/http"
)

// Get reads the resource at path into out; false, and no error, when there is none
// (404).
func (c *Client) Get(ctx context.Context, path string, out any) (bool, error) {
	err := c.Do(ctx, Request{Method: http.MethodGet, Path: path}, out)
	if IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// Create adds a resource to collection: body is its JSON ({"metadata": ..., "spec":
// ...}), or with files its "metadata" part (an app's chart, a profile's archive).
func (c *Client) Create(ctx context.Context, collection string, body any, files ...File) error {
	return c.Do(ctx, Request{Method: http.MethodPost, Path: collection, Body: body, Files: files}, nil)
}

// Replace replaces the resource at path with body (and files), as Create makes one.
func (c *Client) Replace(ctx context.Context, path string, body any, files ...File) error {
	return c.Do(ctx, Request{Method: http.MethodPut, Path: path, Body: body, Files: files}, nil)
}

// Delete deletes the resource at path.
func (c *Client) Delete(ctx context.Context, path string) error {
	return c.Do(ctx, Request{Method: http.MethodDelete, Path: path}, nil)
}
