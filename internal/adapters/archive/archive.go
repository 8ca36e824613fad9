// Package archive reads the tar archives users upload, app charts and app profiles, into
// memory, refusing hostile ones with a message naming the reason, and finds and loads
// the Helm chart an app's archive holds.
package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// Limits against hostile archives (gzip bombs, entry floods). They hold for everything
// one upload unpacks to, the packaged subcharts of a chart included.
const (
	MaxEntries = 1000
	MaxSize    = 32 << 20 // bytes of file content
	// headerSlack is what tar headers and padding may add to the content: a stream of
	// empty entries or of skipped directory data cannot keep the reader busy for long.
	headerSlack = 4 << 20
)

var (
	errNotTar   = errors.New("the file is neither a tar nor a gzip-compressed tar archive")
	errTooLarge = fmt.Errorf("the archive unpacks to more than %d MiB", MaxSize>>20)
	errTooMany  = fmt.Errorf("the archive has more than %d entries", MaxEntries)
)

// budget is what one upload may still unpack.
type budget struct {
	entries int
	content int64 // file content, checked against each header before reading
	stream  int64 // decompressed tar stream, headers and padding included
}

func newBudget() *budget {
	return &budget{entries: MaxEntries, content: MaxSize, stream: MaxSize + headerSlack}
}

// Read returns the regular files of a tar archive, gzip-compressed or not, by clean
// relative path: "./web/Chart.yaml" is "web/Chart.yaml". Directories and PAX global
// headers are skipped. Links, devices, FIFOs, paths leaving the archive, empty archives
// and archives beyond the limits are refused.
func Read(data []byte) (map[string][]byte, error) { return read(data, newBudget()) }

func read(data []byte, b *budget) (map[string][]byte, error) {
	var stream io.Reader = bytes.NewReader(data)
	if bytes.HasPrefix(data, []byte{0x1f, 0x8b}) { // the gzip magic number
		zr, err := gzip.NewReader(stream)
		if err != nil {
			return nil, fmt.Errorf("the archive is corrupt: %v", err)
		}
		stream = zr
	}
	m := &meter{r: stream, b: b}
	tr := tar.NewReader(m)
	files := map[string][]byte{}
	for first := true; ; first = false {
		h, err := tr.Next()
		switch {
		case err == io.EOF:
			if len(files) == 0 {
				return nil, errors.New("the archive is empty: it holds no files")
			}
			if err := drain(m); err != nil {
				return nil, err
			}
			return files, nil
		case errors.Is(err, errTooLarge):
			return nil, err
		case m.err != nil: // the gzip stream itself is broken
			return nil, fmt.Errorf("the archive is corrupt: %v", m.err)
		case err != nil && first:
			return nil, errNotTar
		case err != nil:
			return nil, fmt.Errorf("the archive is corrupt: %v", err)
		}
		if b.entries == 0 {
			return nil, errTooMany
		}
		b.entries--
		name, keep, err := entryPath(h)
		if err != nil {
			return nil, err
		}
		if !keep {
			continue
		}
		if h.Size > b.content {
			return nil, errTooLarge
		}
		body := make([]byte, h.Size)
		if _, err := io.ReadFull(tr, body); err != nil {
			if errors.Is(err, errTooLarge) {
				return nil, err
			}
			if m.err != nil {
				err = m.err
			}
			return nil, fmt.Errorf("the archive is corrupt: entry %q: %v", h.Name, err)
		}
		b.content -= h.Size
		files[name] = body
	}
}

// drain reads what follows the end of the tar archive, so that gzip verifies its
// checksum. Bytes after the compressed stream, or a stream cut after the tar archive
// ended, lose nothing and are accepted, as by EMCO.
func drain(m *meter) error {
	_, err := io.Copy(io.Discard, m)
	switch {
	case err == nil || errors.Is(err, gzip.ErrHeader) || errors.Is(err, io.ErrUnexpectedEOF):
		return nil
	case errors.Is(err, errTooLarge):
		return err
	default:
		return fmt.Errorf("the archive is corrupt: %v", err)
	}
}

// entryPath returns the clean relative path of a regular file entry, keep=false for
// entries that carry no content, or why the entry is refused.
func entryPath(h *tar.Header) (name string, keep bool, err error) {
	// Like EMCO, only files and directories: a link could make a later reader (Helm,
	// a user's tar) write or read outside the chart.
	switch h.Typeflag {
	case tar.TypeReg, tar.TypeDir:
	case tar.TypeXGlobalHeader: // metadata, as `git archive` writes
		return "", false, nil
	case tar.TypeSymlink:
		return "", false, refused(h, "is a symbolic link")
	case tar.TypeLink:
		return "", false, refused(h, "is a hard link")
	case tar.TypeChar, tar.TypeBlock:
		return "", false, refused(h, "is a device")
	case tar.TypeFifo:
		return "", false, refused(h, "is a FIFO")
	default:
		return "", false, refused(h, fmt.Sprintf("has the unsupported type %q", h.Typeflag))
	}
	if path.IsAbs(h.Name) {
		return "", false, fmt.Errorf("archive entry %q has an absolute path", h.Name)
	}
	name = path.Clean(h.Name)
	if name == ".." || strings.HasPrefix(name, "../") {
		return "", false, fmt.Errorf("archive entry %q leads outside the archive through \"..\"", h.Name)
	}
	return name, h.Typeflag == tar.TypeReg && name != ".", nil
}

func refused(h *tar.Header, what string) error {
	return fmt.Errorf("archive entry %q %s: only files and directories are allowed", h.Name, what)
}

// meter counts the decompressed stream against the budget and keeps the first error of
// the compressed stream, to tell a corrupt .tgz from a file that is no tar.
type meter struct {
	r   io.Reader
	b   *budget
	err error
}

func (m *meter) Read(p []byte) (int, error) {
	if m.b.stream <= 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > m.b.stream {
		p = p[:m.b.stream]
	}
	n, err := m.r.Read(p)
	m.b.stream -= int64(n)
	if err != nil && err != io.EOF && m.err == nil {
		m.err = err
	}
	return n, err
}
