package api

import (
	"io"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	commonpb "go.temporal.io/api/common/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// codecPrefix is where the Temporal remote codec protocol is served: the Web UI
// (--ui-codec-endpoint, codec.endpoint) and `temporal --codec-endpoint` POST payloads to
// <prefix>/decode and <prefix>/encode.
const codecPrefix = "/codec"

// registerCodec serves the codec endpoints (admin-only when authentication is on: any
// workflow's payloads can be sent here).
func (s *Server) registerCodec(e *echo.Echo) {
	if s.Codec == nil {
		return
	}
	e.POST(codecPrefix+"/decode", codecHandler(s.Codec.Decode))
	e.POST(codecPrefix+"/encode", codecHandler(s.Codec.Encode))
}

// codecCORS lets the browser-side Temporal UI, served from another origin, call the codec:
// the origins of CodecOrigins, and none when it is empty (Echo's CORS would answer any
// origin, "*", to an empty list).
func (s *Server) codecCORS() echo.MiddlewareFunc {
	origins := originSet(s.CodecOrigins)
	if len(origins) == 0 {
		return func(next echo.HandlerFunc) echo.HandlerFunc { return next }
	}
	return middleware.CORSWithConfig(middleware.CORSConfig{
		Skipper: func(c echo.Context) bool { return !strings.HasPrefix(c.Request().URL.Path, codecPrefix+"/") },
		AllowOriginFunc: func(origin string) (bool, error) {
			o, err := canonicalOrigin(origin)
			return err == nil && origins[o], nil
		},
		AllowMethods:     []string{http.MethodPost},
		AllowHeaders:     []string{echo.HeaderContentType, echo.HeaderAuthorization, "X-Namespace"},
		AllowCredentials: true,
	})
}

func codecHandler(f func([]*commonpb.Payload) ([]*commonpb.Payload, error)) echo.HandlerFunc {
	return func(c echo.Context) error {
		body, err := io.ReadAll(c.Request().Body)
		if err != nil {
			if e := tooLarge(err); e != nil {
				return e
			}
			return badRequest("read body: %v", err)
		}
		var in commonpb.Payloads
		if err := protojson.Unmarshal(body, &in); err != nil {
			return badRequest("body is not a JSON Payloads message {\"payloads\": [...]}: %v", err)
		}
		out, err := f(in.Payloads)
		if err != nil {
			return badRequest("%v", err)
		}
		data, err := protojson.Marshal(&commonpb.Payloads{Payloads: out})
		if err != nil {
			return err
		}
		return c.JSONBlob(http.StatusOK, data)
	}
}
