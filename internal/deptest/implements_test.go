package deptest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// domainPackages are the packages whose interfaces cmd/agent may use but
// never implement (docs/architecture.md, the rule of issue 34 item 1): a
// type that satisfies one is behaviour, and lives beside the interface or in
// internal/service, where a unit test reaches it without the CLI.
var domainPackages = []string{
	module + "pkg/pipeline",
	module + "internal/schedule",
	module + "pkg/session",
	module + "internal/commands",
}

// listedPackage is what `go list -json` says of a package that
// implementers reads.
type listedPackage struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	CgoFiles   []string
	Export     string
	DepOnly    bool
	Error      *struct{ Err string }
}

// implementers type-checks the non-test files of the package pattern target
// (one package) and returns, one line each, every type declared in them (at
// package level or inside a function) whose value or pointer implements a
// non-empty interface of one of domains. Imports are read from the
// compiler's export data (`go list -export`), not from source, so the check
// costs a build of target's dependencies (cached) and one type-check of
// target. Generic types, which cannot be checked uninstantiated, are
// reported as such, not skipped silently.
func implementers(goTool, target string, domains []string) ([]string, error) {
	args := append([]string{"list", "-export", "-deps", "-json", target}, domains...)
	cmd := exec.Command(goTool, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -export: %v\n%s", err, stderr.Bytes())
	}
	exports := map[string]string{}
	var self *listedPackage
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		if p.Error != nil {
			return nil, fmt.Errorf("%s: %s", p.ImportPath, p.Error.Err)
		}
		exports[p.ImportPath] = p.Export
		if !p.DepOnly && !slices.Contains(domains, p.ImportPath) {
			if self != nil {
				return nil, fmt.Errorf("%s names more than one package (%s, %s)", target, self.ImportPath, p.ImportPath)
			}
			self = &p
		}
	}
	if self == nil {
		return nil, fmt.Errorf("go list printed no package %s", target)
	}
	if len(self.CgoFiles) > 0 {
		return nil, fmt.Errorf("%s has cgo files, which this check does not read", self.ImportPath)
	}

	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range self.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(self.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	info := &types.Info{Defs: map[*ast.Ident]types.Object{}}
	if _, err := (&types.Config{Importer: imp}).Check(self.ImportPath, fset, files, info); err != nil {
		return nil, fmt.Errorf("type-check %s: %w", self.ImportPath, err)
	}

	// The domain interfaces, from the same importer: the packages, and so
	// the types in the methods' signatures, are the ones target sees.
	type iface struct {
		name string
		typ  *types.Interface
	}
	var ifaces []iface
	for _, path := range domains {
		pkg, err := imp.Import(path)
		if err != nil {
			return nil, err
		}
		for _, name := range pkg.Scope().Names() {
			tn, ok := pkg.Scope().Lookup(name).(*types.TypeName)
			if !ok || !tn.Exported() || tn.IsAlias() {
				continue
			}
			named, ok := tn.Type().(*types.Named)
			if !ok || named.TypeParams().Len() > 0 {
				continue // a generic interface has no method set until instantiated
			}
			if it, ok := named.Underlying().(*types.Interface); ok && it.NumMethods() > 0 {
				ifaces = append(ifaces, iface{pkg.Name() + "." + name, it})
			}
		}
	}
	if len(ifaces) == 0 {
		return nil, fmt.Errorf("no interfaces found in %v", domains)
	}

	var found []string
	for id, obj := range info.Defs {
		tn, ok := obj.(*types.TypeName)
		if !ok || tn.IsAlias() {
			continue
		}
		named, ok := tn.Type().(*types.Named)
		if !ok || types.IsInterface(named) {
			continue // type parameters; interfaces implement nothing
		}
		where := fset.Position(id.Pos())
		where.Filename = filepath.Base(where.Filename)
		if named.TypeParams().Len() > 0 {
			found = append(found, fmt.Sprintf("%s: type %s is generic, which this check cannot read: declare it elsewhere", where, tn.Name()))
			continue
		}
		for _, i := range ifaces {
			if types.Implements(named, i.typ) || types.Implements(types.NewPointer(named), i.typ) {
				found = append(found, fmt.Sprintf("%s: type %s implements %s", where, tn.Name(), i.name))
			}
		}
	}
	slices.Sort(found)
	return found, nil
}

// TestCmdImplementsNoDomainInterface: cmd/agent is the command line; a type
// there that implements a domain interface is behaviour that only booting
// the whole service reaches.
func TestCmdImplementsNoDomainInterface(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not on PATH; cannot type-check cmd/agent")
	}
	found, err := implementers(goTool, module+"cmd/agent", domainPackages)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("cmd/agent/%s: move it beside the interface or into internal/service", f)
	}
}

// TestImplementersFindsAPlantedType runs the check over testdata/planted, a
// command with types that implement domain interfaces (by value, by
// pointer, declared inside a function) and types that must not count.
func TestImplementersFindsAPlantedType(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not on PATH")
	}
	found, err := implementers(goTool, "./testdata/planted", domainPackages)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"main.go:15:6: type redactor implements pipeline.Redactor",
		"main.go:20:6: type deferrer implements session.Deferrer",
		"main.go:32:6: type generic is generic, which this check cannot read: declare it elsewhere",
		"main.go:39:7: type local implements pipeline.Redactor",
	}
	if !slices.Equal(found, want) {
		t.Errorf("found:\n%s\nwant:\n%s", join(found), join(want))
	}
}

func join(lines []string) string {
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString("\t" + l + "\n")
	}
	return b.String()
}
