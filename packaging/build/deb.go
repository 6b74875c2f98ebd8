package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/deb"
	"github.com/goreleaser/nfpm/v2/files"
)

// pkgSpec is one Debian package: its binary, units, default config and
// maintainer scripts, all under packaging/.
type pkgSpec struct {
	name, bin, description string
	extraBins              []string // shipped when the build made them
	recommends             []string
}

var debs = []pkgSpec{
	{name: "deckhand", bin: "deckhand",
		description: "deckhand in-container agent: supervisor, services (terminal, files, display, ...) and gateway",
		extraBins:   []string{"deckhand-display"},
		recommends:  []string{"xvfb", "openbox", "xauth"}},
	{name: "deckhand-control", bin: "deckhand-control",
		description: "deckhand control plane: accounts, sessions, 2FA, OAuth, tokens; signed responses; bbolt or PostgreSQL"},
}

func runDeb(args []string) error {
	fs := newFlags("deb")
	version := fs.String("version", "0.0.0", "package version (from git describe)")
	arch := fs.String("arch", "amd64", "Debian architecture")
	binDir := fs.String("bin", "bin", "directory holding the built binaries")
	src := fs.String("packaging", "packaging", "the packaging/ directory (units, defaults, scripts)")
	docs := fs.String("docs", "docs/operating/operations.md", "operator guide shipped as documentation")
	out := fs.String("out", "dist", "where the .deb files go")
	_ = fs.Parse(args)
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	v := debVersion(*version)
	for _, p := range debs {
		path, err := buildDeb(p, v, *arch, *binDir, *src, *docs, *out)
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		fmt.Println(path)
	}
	return nil
}

// debVersion turns `git describe` output into a Debian version: v1.2.3 ->
// 1.2.3, v1.2.3-4-gabc -> 1.2.3+4.gabc, a bare commit -> 0.0.0+git.<commit>.
func debVersion(v string) string {
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	v = strings.TrimSuffix(v, "-dirty")
	if regexp.MustCompile(`^[0-9a-f]{7,40}$`).MatchString(v) || v == "" || v == "dev" {
		return "0.0.0+git." + strings.TrimPrefix(v, "dev")
	}
	if m := regexp.MustCompile(`^(.*)-([0-9]+)-(g[0-9a-f]+)$`).FindStringSubmatch(v); m != nil {
		return m[1] + "+" + m[2] + "." + m[3]
	}
	return v
}

func buildDeb(p pkgSpec, version, arch, binDir, src, docs, out string) (string, error) {
	mtime := time.Now().UTC()
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		var sec int64
		if _, err := fmt.Sscan(s, &sec); err == nil {
			mtime = time.Unix(sec, 0).UTC()
		}
	}
	exe := func(srcPath, dst string) *files.Content {
		return &files.Content{Source: srcPath, Destination: dst, FileInfo: &files.ContentFileInfo{Mode: 0o755, MTime: mtime}}
	}
	file := func(srcPath, dst, typ string, mode os.FileMode) *files.Content {
		return &files.Content{Source: srcPath, Destination: dst, Type: typ, FileInfo: &files.ContentFileInfo{Mode: mode, MTime: mtime}}
	}
	contents := files.Contents{
		exe(filepath.Join(binDir, p.bin), "/usr/bin/"+p.bin),
		file(filepath.Join(src, p.name+".service"), "/lib/systemd/system/"+p.name+".service", "", 0o644),
		file(filepath.Join(src, p.name+".socket"), "/lib/systemd/system/"+p.name+".socket", "", 0o644),
		file(filepath.Join(src, "deb", p.name+".default"), "/etc/default/"+p.name, files.TypeConfigNoReplace, 0o640),
	}
	if _, err := os.Stat(docs); err == nil {
		contents = append(contents, file(docs, "/usr/share/doc/"+p.name+"/operations.md", "", 0o644))
	}
	for _, b := range p.extraBins {
		if _, err := os.Stat(filepath.Join(binDir, b)); err == nil {
			contents = append(contents, exe(filepath.Join(binDir, b), "/usr/bin/"+b))
		}
	}
	for _, c := range contents {
		if _, err := os.Stat(c.Source); err != nil {
			return "", fmt.Errorf("missing %s (run make build first): %w", c.Source, err)
		}
	}
	script := func(kind string) string { return filepath.Join(src, "deb", p.name+"."+kind) }
	info := &nfpm.Info{
		Name:          p.name,
		Arch:          arch,
		Platform:      "linux",
		Version:       version,
		VersionSchema: "none",
		Section:       "admin",
		Priority:      "optional",
		Maintainer:    "deckhand maintainers <deckhand@localhost>",
		Description:   p.description,
		Homepage:      "https://localhost/deckhand",
		License:       "Proprietary",
		MTime:         mtime,
		Overridables: nfpm.Overridables{
			Depends:    []string{"passwd"},
			Recommends: p.recommends,
			Contents:   contents,
			Scripts: nfpm.Scripts{
				PostInstall: script("postinst"),
				PreRemove:   script("prerm"),
				PostRemove:  script("postrm"),
			},
		},
	}
	info = nfpm.WithDefaults(info)
	if err := nfpm.PrepareForPackager(info, "deb"); err != nil {
		return "", err
	}
	path := filepath.Join(out, deb.Default.ConventionalFileName(info))
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	if err := deb.Default.Package(info, f); err != nil {
		f.Close()
		os.Remove(path)
		return "", err
	}
	return path, f.Close()
}
