package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/temco/temco/internal/dev/testenv"
)

// tarWith builds a plain tar archive entry by entry, for what testenv.TarOf cannot write.
func tarWith(write func(tw *tar.Writer)) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	write(tw)
	_ = tw.Close()
	return buf.Bytes()
}

func gzipped(data []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(data)
	_ = zw.Close()
	return buf.Bytes()
}

func entries(n int) []byte {
	return tarWith(func(tw *tar.Writer) {
		for i := range n {
			_ = tw.WriteHeader(&tar.Header{Name: "f" + strconv.Itoa(i), Mode: 0o644, Typeflag: tar.TypeReg})
		}
	})
}

func TestReadAcceptsEveryLayout(t *testing.T) {
	profile := map[string]string{"manifest.yaml": "m", "override_values.yaml": "v"}
	cases := []struct {
		name    string
		archive []byte
		want    []string // the paths read, sorted
	}{
		{"bare names, gzip", testenv.TarOf(profile, true), []string{"manifest.yaml", "override_values.yaml"}},
		{"bare names, plain tar", testenv.TarOf(profile, false), []string{"manifest.yaml", "override_values.yaml"}},
		{"tar -C dir . (./ and directory entries)", testenv.TarOf(map[string]string{"./": "", "./manifest.yaml": "m",
			"./web/": "", "./web/Chart.yaml": "c"}, true), []string{"manifest.yaml", "web/Chart.yaml"}},
		{"a folder", testenv.TarOf(map[string]string{"web/": "", "web/Chart.yaml": "c"}, false), []string{"web/Chart.yaml"}},
		{"a .. that stays inside", testenv.TarOf(map[string]string{"web/../x": "x"}, true), []string{"x"}},
		{"a PAX global header (git archive)", tarWith(func(tw *tar.Writer) {
			_ = tw.WriteHeader(&tar.Header{Name: "pax_global_header", Typeflag: tar.TypeXGlobalHeader, PAXRecords: map[string]string{"comment": "abc"}})
			_ = tw.WriteHeader(&tar.Header{Name: "web/Chart.yaml", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
			_, _ = tw.Write([]byte("c"))
		}), []string{"web/Chart.yaml"}},
		{"bytes after the gzip stream", append(testenv.TarOf(profile, true), "trailing"...),
			[]string{"manifest.yaml", "override_values.yaml"}},
		{"exactly 1000 entries", entries(MaxEntries), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files, err := Read(tc.archive)
			if err != nil {
				t.Fatal(err)
			}
			got := slices.Sorted(maps.Keys(files))
			if tc.want != nil && !slices.Equal(got, tc.want) {
				t.Errorf("paths %q, want %q", got, tc.want)
			}
		})
	}
	files, _ := Read(testenv.TarOf(profile, true))
	if string(files["override_values.yaml"]) != "v" {
		t.Errorf("content %q, want the file's", files["override_values.yaml"])
	}
}

func TestReadRefusesBadAndHostileArchives(t *testing.T) {
	good := testenv.TarOf(map[string]string{"web/Chart.yaml": strings.Repeat("c", 4096)}, true)
	badChecksum := bytes.Clone(good)
	badChecksum[len(badChecksum)-8] ^= 0xff // the CRC-32 in the gzip trailer
	entry := func(h tar.Header) []byte { return tarWith(func(tw *tar.Writer) { _ = tw.WriteHeader(&h) }) }
	pax := strings.Repeat("x", 512<<10)
	cases := []struct {
		name    string
		archive []byte
		want    string
	}{
		{"text", []byte("hello, this is no archive"), "neither a tar nor a gzip-compressed tar archive"},
		{"a zip", []byte("PK\x03\x04" + strings.Repeat("\x00", 600)), "neither a tar nor a gzip-compressed tar archive"},
		{"gzip of text", gzipped([]byte("hello")), "neither a tar nor a gzip-compressed tar archive"},
		{"no bytes", nil, "the archive is empty"},
		{"no entries", testenv.TarOf(nil, true), "the archive is empty"},
		{"directories only", testenv.TarOf(map[string]string{"./": "", "web/": ""}, false), "the archive is empty"},
		{"truncated gzip", good[:len(good)/2], "the archive is corrupt"},
		{"bad gzip checksum", badChecksum, "the archive is corrupt: gzip: invalid checksum"},
		{"truncated tar", testenv.TarOf(map[string]string{"a": "1", "b": strings.Repeat("x", 2048)}, false)[:1700], "the archive is corrupt"},
		{"symbolic link", entry(tar.Header{Name: "web/values.yaml", Linkname: "/etc/shadow", Typeflag: tar.TypeSymlink}),
			`archive entry "web/values.yaml" is a symbolic link: only files and directories are allowed`},
		{"hard link", entry(tar.Header{Name: "web/values.yaml", Linkname: "/etc/shadow", Typeflag: tar.TypeLink}),
			`archive entry "web/values.yaml" is a hard link`},
		{"character device", entry(tar.Header{Name: "mem", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 1}), `archive entry "mem" is a device`},
		{"block device", entry(tar.Header{Name: "sda", Typeflag: tar.TypeBlock, Devmajor: 8}), `archive entry "sda" is a device`},
		{"fifo", entry(tar.Header{Name: "p", Typeflag: tar.TypeFifo}), `archive entry "p" is a FIFO`},
		{"absolute path", testenv.TarOf(map[string]string{"/etc/passwd": "x"}, true), `archive entry "/etc/passwd" has an absolute path`},
		{"parent directory", testenv.TarOf(map[string]string{"../x": "x"}, true), `archive entry "../x" leads outside the archive`},
		{"parent through a folder", testenv.TarOf(map[string]string{"web/../../x": "x"}, true), `archive entry "web/../../x" leads outside the archive`},
		{"directory outside", testenv.TarOf(map[string]string{"../d/": ""}, true), `archive entry "../d/" leads outside the archive`},
		{"1001 entries", entries(MaxEntries + 1), "the archive has more than 1000 entries"},
		{"a header claiming 1 TiB", entry(tar.Header{Name: "v", Size: 1 << 40, Typeflag: tar.TypeReg}), "unpacks to more than 32 MiB"},
		{"files over 32 MiB together", tarWith(func(tw *tar.Writer) {
			for _, n := range []string{"a", "b"} {
				_ = tw.WriteHeader(&tar.Header{Name: n, Size: MaxSize / 2, Typeflag: tar.TypeReg})
				_, _ = tw.Write(make([]byte, MaxSize/2))
			}
			_ = tw.WriteHeader(&tar.Header{Name: "c", Size: 1, Typeflag: tar.TypeReg})
			_, _ = tw.Write([]byte("c"))
		}), "unpacks to more than 32 MiB"},
		{"headers over the limit", tarWith(func(tw *tar.Writer) {
			for i := range 100 {
				_ = tw.WriteHeader(&tar.Header{Name: strconv.Itoa(i), Typeflag: tar.TypeReg, PAXRecords: map[string]string{"comment": pax}})
			}
		}), "unpacks to more than 32 MiB"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Read(tc.archive); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestReadAcceptsExactly32MiB(t *testing.T) {
	data := tarWith(func(tw *tar.Writer) {
		_ = tw.WriteHeader(&tar.Header{Name: "big", Size: MaxSize, Typeflag: tar.TypeReg})
		_, _ = tw.Write(make([]byte, MaxSize))
	})
	if files, err := Read(data); err != nil || len(files["big"]) != MaxSize {
		t.Fatalf("a 32 MiB file: %v", err)
	}
}

func TestHostileArchivesAreRefused(t *testing.T) {
	want := map[string]string{"bomb": "unpacks to more than 32 MiB", "huge-header": "unpacks to more than 32 MiB",
		"traversal": `"../../etc/cron.d/x" leads outside the archive`, "symlink": `"web/values.yaml" is a symbolic link`,
		"device": `"web/values.yaml" is a device`, "flood": "more than 1000 entries"}
	for name, a := range testenv.HostileArchives("web") {
		if _, err := Read(a); err == nil || !strings.Contains(err.Error(), want[name]) {
			t.Errorf("%s archive: %v, want an error saying %q", name, err, want[name])
		}
	}
}
