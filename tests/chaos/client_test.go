package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"sync"
	"time"
)

// answer is what one request got: a status code, or -1 and the transport's error when
// no answer came (the api was down, or died holding the request).
type answer struct {
	code int
	body []byte
}

func (a answer) ok() bool { return a.code >= 200 && a.code < 300 }

// lost: nothing says whether the request was carried out.
func (a answer) lost() bool { return a.code < 0 || a.code >= 500 }

// busy: the API refused for now and says to retry (a write claim a killed api left, until
// its lease ends; a rate limit): nothing was done.
func (a answer) busy() bool {
	return a.code == http.StatusTooManyRequests || a.code == http.StatusConflict && bytes.HasSuffix(bytes.TrimSpace(a.body), []byte(`retry"}`))
}

func (a answer) String() string { return fmt.Sprintf("%d %.300s", a.code, a.body) }

// journal counts every answer by class: the run's record of what the API said.
type journal struct {
	mu    sync.Mutex
	codes map[string]int // "2xx", "4xx", "5xx", "lost"
	five  []string       // the 5xx answers, for the report
}

func (j *journal) add(method, path string, a answer) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.codes == nil {
		j.codes = map[string]int{}
	}
	switch {
	case a.code < 0:
		j.codes["lost"]++
	default:
		j.codes[fmt.Sprintf("%dxx", a.code/100)]++
	}
	if a.code >= 500 && len(j.five) < 50 {
		j.five = append(j.five, fmt.Sprintf("%s %s: %s", method, path, a))
	}
}

// client is one of the generator's concurrent clients; its requests go to the apis in
// turn, so one api's death leaves it the others.
type client struct {
	apis []string // /v2 base URLs
	next int
	j    *journal
	http *http.Client
}

func newClient(apis []string, j *journal, seed int) *client {
	return &client{apis: apis, next: seed, j: j, http: &http.Client{Timeout: 90 * time.Second}}
}

func (c *client) send(method, path, contentType string, body []byte) answer {
	base := c.apis[c.next%len(c.apis)]
	c.next++
	req, _ := http.NewRequest(method, base+path, bytes.NewReader(body))
	req.Header.Set("X-Temco-Client", "chaos") // as temco's clients: the api takes no bodiless change without it
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	var a answer
	resp, err := c.http.Do(req)
	if err != nil {
		a = answer{code: -1, body: []byte(err.Error())}
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		a = answer{code: resp.StatusCode, body: b}
	}
	c.j.add(method, path, a)
	return a
}

func (c *client) do(method, path string, body any) answer {
	var data []byte
	ct := ""
	if body != nil {
		data, _ = json.Marshal(body)
		ct = "application/json"
	}
	return c.send(method, path, ct, data)
}

func (c *client) multipart(method, path string, metadata any, file []byte) answer {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	md, _ := json.Marshal(metadata)
	_ = mw.WriteField("metadata", string(md))
	fw, _ := mw.CreateFormFile("file", "file")
	_, _ = fw.Write(file)
	_ = mw.Close()
	return c.send(method, path, mw.FormDataContentType(), buf.Bytes())
}

// read GETs path until an api answers it (200 or 404), through the kills; false when
// ctx ends first.
func (c *client) read(ctx context.Context, path string, v any) (found bool, err error) {
	for {
		a := c.do(http.MethodGet, path, nil)
		switch {
		case a.code == http.StatusOK:
			if v != nil {
				if err := json.Unmarshal(a.body, v); err != nil {
					return false, fmt.Errorf("GET %s: %v: %.200s", path, err, a.body)
				}
			}
			return true, nil
		case a.code == http.StatusNotFound:
			return false, nil
		case a.lost() || a.busy():
		default:
			return false, fmt.Errorf("GET %s: %s", path, a)
		}
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("GET %s: no answer before the deadline (last %s)", path, a)
		case <-time.After(500 * time.Millisecond): // the api is down: ask again shortly
		}
	}
}

func res(name string, spec any) map[string]any {
	if spec == nil {
		spec = map[string]any{}
	}
	return map[string]any{"metadata": map[string]any{"name": name}, "spec": spec}
}
