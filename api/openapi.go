package api

import (
	"fmt"
	"net/http"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/docs"
)

// OpenAPIPath is the route of the API's OpenAPI document, as JSON.
const OpenAPIPath = "/v1/openapi.json"

// openAPIJSON is docs/openapi.yaml (docs.OpenAPIYAML) as JSON, converted
// once, on the first NewServer: every Server of the process serves the same
// bytes.
var openAPIJSON = sync.OnceValues(func() ([]byte, error) { return yamlToJSON(docs.OpenAPIYAML) })

// yamlToJSON converts a YAML document to JSON: mappings become objects (a
// key that is not a string, such as an unquoted status 200, becomes its
// text), sequences arrays, scalars their JSON values; anchors and aliases
// are resolved. Object keys come out sorted.
func yamlToJSON(y []byte) ([]byte, error) {
	var v any
	if err := yaml.Unmarshal(y, &v); err != nil {
		return nil, fmt.Errorf("openapi: parse yaml: %w", err)
	}
	v, err := jsonValue(v, "")
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	return wire.MarshalJSON(v)
}

// jsonValue returns v, as the YAML decoder gives it, with every mapping a
// map[string]any; path names v in an error.
func jsonValue(v any, path string) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			c, err := jsonValue(e, path+"/"+k)
			if err != nil {
				return nil, err
			}
			v[k] = c
		}
		return v, nil
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			ks, ok := k.(string)
			if !ok {
				switch k.(type) {
				case int, int64, uint64, float64, bool:
					ks = fmt.Sprint(k)
				default:
					return nil, fmt.Errorf("%s: key %v of type %T has no JSON form", path, k, k)
				}
			}
			if _, dup := m[ks]; dup {
				return nil, fmt.Errorf("%s: key %q twice", path, ks)
			}
			c, err := jsonValue(e, path+"/"+ks)
			if err != nil {
				return nil, err
			}
			m[ks] = c
		}
		return m, nil
	case []any:
		for i, e := range v {
			c, err := jsonValue(e, fmt.Sprintf("%s/%d", path, i))
			if err != nil {
				return nil, err
			}
			v[i] = c
		}
		return v, nil
	case nil, string, bool, int, int64, uint64, float64:
		return v, nil
	}
	return nil, fmt.Errorf("%s: value of type %T has no JSON form (quote it)", path, v)
}

// handleOpenAPI serves GET /v1/openapi.json: the OpenAPI document of the
// client port's routes.
func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	if _, err := parseQuery(r); err != nil {
		s.writeError(w, err)
		return
	}
	b, err := openAPIJSON()
	if err != nil {
		s.writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(b); err != nil {
		s.log.Debug("write answer", "err", err)
	}
}
