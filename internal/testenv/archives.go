package testenv

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"sort"
)

// TarGz packs files (path -> content) into a .tar.gz, in path order.
func TarGz(files map[string]string) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		_ = tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg})
		_, _ = tw.Write([]byte(files[n]))
	}
	_ = tw.Close()
	_ = zw.Close()
	return buf.Bytes()
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

// Profile packs an app profile holding override values.
func Profile(values string) []byte {
	return TarGz(map[string]string{
		"manifest.yaml":        "---\nversion: v1\ntype:\n  values: \"override_values.yaml\"\n",
		"override_values.yaml": values,
	})
}
