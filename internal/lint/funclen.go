// Package lint holds checks over the module's own source that go vet and
// staticcheck do not make, run as ordinary Go tests.
package lint

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Func is one function declaration and its length in lines, counted from the
// line of the func keyword to the line of the closing brace.
type Func struct {
	// Name is "pkgdir.Func" or "pkgdir.Type.Method", pkgdir being the
	// slash-separated directory relative to the module root (left out for
	// the root package).
	Name  string
	File  string // slash-separated, relative to the module root
	Line  int
	Lines int
}

// skipDirs are directory names whose Go files are not the module's own code.
var skipDirs = map[string]bool{
	"third_party":  true,
	"testdata":     true,
	"node_modules": true,
}

// LongFuncs lists every function declared in the non-test, non-generated Go
// files under root that is longer than max lines, longest first. Directories
// named third_party, testdata or node_modules, and hidden ones, are skipped.
func LongFuncs(root string, max int) ([]Func, error) {
	var long []Func
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(file string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if file != root && (skipDirs[d.Name()] || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(file, ".go") || strings.HasSuffix(file, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, file, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("parse %s: %w", file, err)
		}
		if ast.IsGenerated(f) {
			return nil
		}
		rel, err := filepath.Rel(root, file)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			start := fset.Position(fd.Pos()).Line
			n := fset.Position(fd.End()).Line - start + 1
			if n > max {
				long = append(long, Func{Name: funcName(rel, fd), File: rel, Line: start, Lines: n})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(long, func(i, j int) bool {
		if long[i].Lines != long[j].Lines {
			return long[i].Lines > long[j].Lines
		}
		return long[i].Name < long[j].Name
	})
	return long, nil
}

// funcName names fd as "dir.Func" or "dir.Type.Method".
func funcName(file string, fd *ast.FuncDecl) string {
	name := fd.Name.Name
	if fd.Recv != nil && len(fd.Recv.List) > 0 {
		name = recvType(fd.Recv.List[0].Type) + "." + name
	}
	if dir := path.Dir(file); dir != "." {
		return dir + "." + name
	}
	return name
}

// recvType is the name of a receiver's type, without pointer or type parameters.
func recvType(t ast.Expr) string {
	switch t := t.(type) {
	case *ast.StarExpr:
		return recvType(t.X)
	case *ast.IndexExpr:
		return recvType(t.X)
	case *ast.IndexListExpr:
		return recvType(t.X)
	case *ast.Ident:
		return t.Name
	}
	return "?"
}
