// Command schemagen writes the strict JSON schemas kubeconform validates
// against, for exactly the kinds the given manifests use, from the
// Kubernetes OpenAPI document (api/openapi-spec/swagger.json of the
// k8s.io/kubernetes module, which the Go module proxy serves). kubeconform
// otherwise downloads them from GitHub, which CI cannot reach.
//
// The schemas are made the way kubeconform's own ("standalone-strict") are:
// every object that lists its properties refuses others, int-or-string and
// quantities take a string or a number, and each file carries the whole
// definitions table so that its references resolve inside it.
//
//	go run ./deploy/kubernetes/schemagen -swagger swagger.json -out DIR rendered.yaml…
//
// writes DIR/<kind>-<group>-<version>.json, the names kubeconform's
// {{.ResourceKind}}{{.KindSuffix}} template asks for.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("schemagen", flag.ContinueOnError)
	swagger := fs.String("swagger", "", "the Kubernetes OpenAPI v2 document (swagger.json)")
	out := fs.String("out", "", "directory the schemas are written to")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *swagger == "" || *out == "" || fs.NArg() == 0 {
		return errors.New("usage: schemagen -swagger swagger.json -out DIR manifest.yaml…")
	}
	kinds, err := manifestKinds(fs.Args())
	if err != nil {
		return err
	}
	doc, err := os.ReadFile(*swagger)
	if err != nil {
		return err
	}
	var spec struct {
		Definitions map[string]map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(doc, &spec); err != nil {
		return fmt.Errorf("%s: %w", *swagger, err)
	}
	defs := make(map[string]any, len(spec.Definitions))
	byGVK := map[gvk]string{}
	for name, def := range spec.Definitions {
		for _, k := range definitionGVKs(def) {
			byGVK[k] = name
		}
		defs[name] = strict(def)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	for k := range kinds {
		name, ok := byGVK[k]
		if !ok {
			return fmt.Errorf("%s %s: no such kind in %s", k.apiVersion(), k.Kind, *swagger)
		}
		schema, err := json.Marshal(map[string]any{
			"$ref":        "#/definitions/" + name,
			"definitions": defs,
		})
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(*out, k.fileName()), schema, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// gvk names a kind as the manifests and the OpenAPI document do.
type gvk struct{ Group, Version, Kind string }

func (k gvk) apiVersion() string {
	if k.Group == "" {
		return k.Version
	}
	return k.Group + "/" + k.Version
}

// fileName is kubeconform's {{.ResourceKind}}{{.KindSuffix}}.json: the
// lower-case kind, the group's first label and the version.
func (k gvk) fileName() string {
	name := strings.ToLower(k.Kind)
	if k.Group != "" {
		name += "-" + strings.ToLower(strings.Split(k.Group, ".")[0])
	}
	return name + "-" + strings.ToLower(k.Version) + ".json"
}

// manifestKinds reads the kinds out of multi-document YAML files.
func manifestKinds(files []string) (map[gvk]bool, error) {
	kinds := map[gvk]bool{}
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		dec := yaml.NewDecoder(bufio.NewReader(f))
		for {
			var head struct {
				APIVersion string `yaml:"apiVersion"`
				Kind       string `yaml:"kind"`
			}
			err := dec.Decode(&head)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				f.Close()
				return nil, fmt.Errorf("%s: %w", file, err)
			}
			if head.Kind == "" {
				continue
			}
			group, version, found := strings.Cut(head.APIVersion, "/")
			if !found {
				group, version = "", head.APIVersion
			}
			kinds[gvk{group, version, head.Kind}] = true
		}
		f.Close()
	}
	return kinds, nil
}

// definitionGVKs reads x-kubernetes-group-version-kind.
func definitionGVKs(def map[string]any) []gvk {
	raw, _ := def["x-kubernetes-group-version-kind"].([]any)
	var kinds []gvk
	for _, r := range raw {
		m, _ := r.(map[string]any)
		g, _ := m["group"].(string)
		v, _ := m["version"].(string)
		k, _ := m["kind"].(string)
		kinds = append(kinds, gvk{g, v, k})
	}
	return kinds
}

// strict rewrites one schema the way kubeconform's strict schemas are made:
// objects with listed properties refuse others, and the two Kubernetes
// string-or-number types take either.
func strict(v any) any {
	switch s := v.(type) {
	case map[string]any:
		if f, _ := s["format"].(string); f == "int-or-string" {
			return map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}}
		}
		out := make(map[string]any, len(s)+1)
		for k, e := range s {
			out[k] = strict(e)
		}
		if _, ok := s["properties"]; ok {
			if _, set := s["additionalProperties"]; !set {
				out["additionalProperties"] = false
			}
		}
		if isQuantity(s) {
			out = map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "number"}}}
		}
		return out
	case []any:
		out := make([]any, len(s))
		for i, e := range s {
			out[i] = strict(e)
		}
		return out
	}
	return v
}

// isQuantity tells resource.Quantity's definition ("64Mi" or 1).
func isQuantity(s map[string]any) bool {
	d, _ := s["description"].(string)
	return s["type"] == "string" && strings.HasPrefix(d, "Quantity is a fixed-point representation of a number.")
}
