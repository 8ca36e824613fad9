package artifact

import (
	"strings"
	"testing"

	"github.com/temco/temco/internal/core/appctx"
)

func TestImagesAreReadAsKubernetesDoes(t *testing.T) {
	d := "sha256:" + strings.Repeat("ab", 32)
	for img, want := range map[string]imageRef{
		"nginx":                        {"registry-1.docker.io", "library/nginx", "latest", ""},
		"bitnami/redis:7.2":            {"registry-1.docker.io", "bitnami/redis", "7.2", ""},
		"docker.io/library/busybox:1":  {"registry-1.docker.io", "library/busybox", "1", ""},
		"127.0.0.1:20008/images/web:1": {"127.0.0.1:20008", "images/web", "1", ""},
		"localhost/web":                {"localhost", "web", "latest", ""},
		"ghcr.io/org/app:v1@" + d:      {"ghcr.io", "org/app", "v1", d},
		"registry.k8s.io/pause@" + d:   {"registry.k8s.io", "pause", "latest", d},
	} {
		if got, err := parseImage(img); err != nil || got != want {
			t.Errorf("%s: %+v, %v; want %+v", img, got, err, want)
		}
	}
	for _, bad := range []string{"Web:1", "ghcr.io/org/app@sha256:abc"} {
		if _, err := parseImage(bad); err == nil {
			t.Errorf("%s was accepted", bad)
		}
	}
}

func TestEveryContainerOfAnyKindIsPinnedOnce(t *testing.T) {
	d1, d2 := "sha256:"+strings.Repeat("1", 64), "sha256:"+strings.Repeat("2", 64)
	cron := `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"c"},"spec":{"jobTemplate":{"spec":{"template":{"spec":{` +
		`"initContainers":[{"name":"i","image":"busybox:1"}],"containers":[{"name":"m","image":"reg.example.com/app:2"},{"name":"s","image":"reg.example.com/side@` + d2 + `"}]}}}}}}`
	o := appctx.Object{Ref: appctx.Ref{Kind: "CronJob", Name: "c"}, Manifest: cron}
	got := imagesOf(cron)
	if len(got) != 3 {
		t.Fatalf("images %v, want the init container's and both containers'", got)
	}
	pinned, changed, err := pinObject(o, map[string]string{"busybox:1": d1, "reg.example.com/app:2": d2, "reg.example.com/side@" + d2: d2})
	if err != nil || !changed {
		t.Fatalf("pinned %v, %v", changed, err)
	}
	for _, want := range []string{`"busybox:1@` + d1 + `"`, `"reg.example.com/app:2@` + d2 + `"`, `"reg.example.com/side@` + d2 + `"`} {
		if !strings.Contains(pinned.Manifest, want) {
			t.Errorf("pinned manifest lacks %s: %s", want, pinned.Manifest)
		}
	}
	if pinned.Hash == "" || pinned.Hash == o.Hash || pinned.Name != "c" {
		t.Errorf("pinned object %+v", pinned.Ref)
	}
	if _, again, _ := pinObject(pinned, map[string]string{"busybox:1": d1}); again {
		t.Error("an image already named by digest was pinned again")
	}
}
