package topology

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/testutil"
)

// jsonGoldenCases also get a golden of RenderJSON's output.
var jsonGoldenCases = []string{"galera-node-missing", "multi-source-errant", "ring", "unreachable-primary"}

// loadCase reads testdata/analyze/<name>/instances.json.
func loadCase(t testing.TB, name string) []*dbpilot.Instance {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "analyze", name, "instances.json"))
	if err != nil {
		t.Fatal(err)
	}
	var in []*dbpilot.Instance
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return in
}

func caseNames(t testing.TB) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join("testdata", "analyze", "*", "instances.json"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no test cases: %v", err)
	}
	var names []string
	for _, d := range dirs {
		names = append(names, filepath.Base(filepath.Dir(d)))
	}
	return names
}

func TestGolden(t *testing.T) {
	for _, name := range caseNames(t) {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata", "analyze", name)
			in := loadCase(t, name)

			problems := Analyze(in, AnalyzeOptions{})
			if problems == nil {
				problems = []dbpilot.Problem{}
			}
			b, err := json.MarshalIndent(problems, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, filepath.Join(dir, "problems.golden.json"), append(b, '\n'))

			clusters := Clusters(in)
			var tree bytes.Buffer
			if err := RenderText(&tree, clusters, problems); err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, filepath.Join(dir, "tree.golden.txt"), tree.Bytes())

			if slices.Contains(jsonGoldenCases, name) {
				var doc bytes.Buffer
				if err := RenderJSON(&doc, clusters, problems); err != nil {
					t.Fatal(err)
				}
				testutil.Golden(t, filepath.Join(dir, "topology.golden.json"), doc.Bytes())
			}

			// Analysis is a pure function of the set of instances: their order
			// does not matter.
			rev := slices.Clone(in)
			slices.Reverse(rev)
			again, _ := json.Marshal(Analyze(rev, AnalyzeOptions{}))
			first, _ := json.Marshal(Analyze(in, AnalyzeOptions{}))
			if !bytes.Equal(again, first) {
				t.Errorf("Analyze depends on the order of instances")
			}
		})
	}
}
