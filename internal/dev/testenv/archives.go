package testenv

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// TarGz packs files (path -> content) into a .tar.gz, in path order.
func TarGz(files map[string]string) []byte { return TarOf(files, true) }

// TarOf packs files (path -> content) into a tar archive, gzip-compressed or plain, in
// path order. A path ending in "/" is a directory entry, as tar writes for the folders
// it walks: `tar -czf web.tgz -C helm .` is TarOf({"./": "", "./web/": "",
// "./web/Chart.yaml": ...}, true).
func TarOf(files map[string]string, compress bool) []byte {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	write := func(tw *tar.Writer) {
		for _, n := range names {
			if strings.HasSuffix(n, "/") {
				_ = tw.WriteHeader(&tar.Header{Name: n, Mode: 0o755, Typeflag: tar.TypeDir})
				continue
			}
			_ = tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg})
			_, _ = tw.Write([]byte(files[n]))
		}
	}
	if !compress {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		write(tw)
		_ = tw.Close()
		return buf.Bytes()
	}
	return tarGzOf(func(tw *tar.Writer) { write(tw); _ = tw.Close() })
}

// Chart packs a Helm chart named name whose templates are given by file name.
func Chart(name string, values string, templates map[string]string) []byte {
	files := map[string]string{
		name + "/Chart.yaml":  "apiVersion: v2\nname: " + name + "\nversion: 0.1.0\n",
		name + "/values.yaml": values,
	}
	for f, t := range templates {
		files[name+"/templates/"+f] = t
	}
	return TarGz(files)
}

// PackChart packs the chart folder dir as an app's archive: a .tgz holding the chart in a
// folder named app, as `tar -czf app.tgz app` would.
func PackChart(dir, app string) ([]byte, error) {
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		files[app+"/"+filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err == nil && files[app+"/Chart.yaml"] == "" {
		err = fmt.Errorf("no chart in %s", dir)
	}
	return TarGz(files), err
}

// Profile packs an app profile holding override values.
func Profile(values string) []byte {
	return TarGz(map[string]string{
		"manifest.yaml":        "---\nversion: v1\ntype:\n  values: \"override_values.yaml\"\n",
		"override_values.yaml": values,
	})
}

// HostileArchives are .tar.gz files built to hurt an unpacker, by what they attempt:
// a gzip bomb (64 KiB unpacking to 64 MiB of zeros, over every limit), entries escaping the root, a
// symlink to a host file, device and FIFO entries, a header claiming a huge file, and an entry flood.
func HostileArchives(root string) map[string][]byte {
	out := map[string][]byte{}
	out["bomb"] = tarGzOf(func(tw *tar.Writer) {
		_ = tw.WriteHeader(&tar.Header{Name: root + "/values.yaml", Mode: 0o644, Size: 64 << 20, Typeflag: tar.TypeReg})
		zeros := make([]byte, 1<<20)
		for range 64 {
			_, _ = tw.Write(zeros)
		}
	})
	out["traversal"] = TarGz(map[string]string{root + "/Chart.yaml": "apiVersion: v2\nname: x\nversion: 0.1.0\n",
		"../../etc/cron.d/x": "* * * * * root sh", root + "/../../../x": "x", "/etc/passwd": "root::0:0::/:"})
	out["symlink"] = tarGzOf(func(tw *tar.Writer) {
		_ = tw.WriteHeader(&tar.Header{Name: root + "/values.yaml", Linkname: "/etc/shadow", Typeflag: tar.TypeSymlink})
		_ = tw.WriteHeader(&tar.Header{Name: root + "/templates", Linkname: "/", Typeflag: tar.TypeSymlink})
		_ = tw.WriteHeader(&tar.Header{Name: root + "/override_values.yaml", Linkname: "/etc/passwd", Typeflag: tar.TypeLink})
	})
	out["device"] = tarGzOf(func(tw *tar.Writer) {
		_ = tw.WriteHeader(&tar.Header{Name: root + "/values.yaml", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 1})
		_ = tw.WriteHeader(&tar.Header{Name: root + "/Chart.yaml", Typeflag: tar.TypeFifo})
	})
	out["huge-header"] = tarGzOf(func(tw *tar.Writer) {
		_ = tw.WriteHeader(&tar.Header{Name: root + "/values.yaml", Mode: 0o644, Size: 1 << 40, Typeflag: tar.TypeReg})
		_, _ = tw.Write([]byte("a: 1\n"))
	})
	out["flood"] = tarGzOf(func(tw *tar.Writer) {
		for i := range 5000 {
			_ = tw.WriteHeader(&tar.Header{Name: root + "/f" + strconv.Itoa(i), Mode: 0o644, Typeflag: tar.TypeReg})
		}
	})
	return out
}

// tarGzOf builds a .tar.gz by writing entries with write; a truncated entry is left
// as written (the writer's errors are ignored on purpose).
func tarGzOf(write func(*tar.Writer)) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	tw := tar.NewWriter(zw)
	write(tw)
	_ = tw.Flush()
	_ = zw.Close()
	return buf.Bytes()
}
