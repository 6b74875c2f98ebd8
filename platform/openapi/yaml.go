package openapi

import (
	"cmp"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Marshal renders a document as JSON and YAML. The YAML keeps keys in
// the order people write them (openapi, info, paths, components; in an
// operation summary, description, parameters, requestBody, responses), so
// the document reads top-down; JSON stays sorted.
func Marshal(doc map[string]any) (jsonDoc, yamlDoc []byte, err error) {
	jsonDoc, err = json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, nil, err
	}
	// Round-trip through JSON so YAML sees plain maps and slices only.
	var plain any
	if err = json.Unmarshal(jsonDoc, &plain); err != nil {
		return nil, nil, err
	}
	node, err := yamlNode(plain, yamlDocument)
	if err != nil {
		return nil, nil, err
	}
	yamlDoc, err = yaml.Marshal(node)
	return jsonDoc, yamlDoc, err
}

// yamlKind is where a value sits in an OpenAPI document; it decides the
// order of a mapping's keys and what its children are.
type yamlKind int

const (
	yamlOther yamlKind = iota
	yamlDocument
	yamlInfo
	yamlPaths      // path -> path item
	yamlPathItem   // method -> operation
	yamlOperation  // summary, parameters, ...
	yamlParameter  // one entry of parameters
	yamlBody       // requestBody
	yamlResponses  // status -> response
	yamlResponse   // description, content
	yamlContent    // media type -> {schema}
	yamlMedia      // {schema}
	yamlSchema     // type, properties, ...
	yamlSchemaMap  // name -> schema (properties, components.schemas)
	yamlComponents // schemas
)

// yamlOrder lists a kind's keys in writing order; keys not listed follow,
// sorted.
var yamlOrder = map[yamlKind][]string{
	yamlDocument:  {"openapi", "info", "servers", "security", "tags", "paths", "components"},
	yamlInfo:      {"title", "version", "description"},
	yamlPathItem:  {"summary", "description", "parameters", "get", "put", "post", "patch", "delete", "head", "options", "trace"},
	yamlOperation: {"tags", "summary", "description", "operationId", "parameters", "requestBody", "responses", "security"},
	yamlParameter: {"name", "in", "description", "required", "schema"},
	yamlBody:      {"description", "required", "content"},
	yamlResponse:  {"description", "headers", "content"},
	yamlMedia:     {"schema", "example"},
	yamlSchema: {"$ref", "type", "format", "description", "enum", "nullable", "required", "properties",
		"items", "additionalProperties"},
}

// yamlChild is the kind of the value under key in a mapping of kind k.
func yamlChild(k yamlKind, key string) yamlKind {
	switch k {
	case yamlDocument:
		switch key {
		case "info":
			return yamlInfo
		case "paths":
			return yamlPaths
		case "components":
			return yamlComponents
		}
	case yamlPaths:
		return yamlPathItem
	case yamlPathItem:
		if key == "parameters" {
			return yamlParameter
		}
		return yamlOperation
	case yamlOperation:
		switch key {
		case "parameters":
			return yamlParameter // applies to each element
		case "requestBody":
			return yamlBody
		case "responses":
			return yamlResponses
		}
	case yamlParameter, yamlMedia:
		if key == "schema" {
			return yamlSchema
		}
	case yamlBody, yamlResponse:
		if key == "content" {
			return yamlContent
		}
	case yamlResponses:
		return yamlResponse
	case yamlContent:
		return yamlMedia
	case yamlSchema:
		switch key {
		case "properties":
			return yamlSchemaMap
		case "items", "additionalProperties":
			return yamlSchema
		}
	case yamlSchemaMap:
		return yamlSchema
	case yamlComponents:
		if key == "schemas" {
			return yamlSchemaMap
		}
	}
	return yamlOther
}

// yamlNode turns a plain JSON value into a YAML node with its mappings'
// keys in writing order.
func yamlNode(v any, k yamlKind) (*yaml.Node, error) {
	switch v := v.(type) {
	case map[string]any:
		order := yamlOrder[k]
		rank := func(key string) int { // listed keys first
			if i := slices.Index(order, key); i >= 0 {
				return i
			}
			return len(order)
		}
		keys := slices.SortedFunc(maps.Keys(v), func(a, b string) int {
			return cmp.Or(cmp.Compare(rank(a), rank(b)), strings.Compare(a, b))
		})
		n := &yaml.Node{Kind: yaml.MappingNode}
		for _, key := range keys {
			kn := &yaml.Node{}
			if err := kn.Encode(key); err != nil {
				return nil, err
			}
			vn, err := yamlNode(v[key], yamlChild(k, key))
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, kn, vn)
		}
		return n, nil
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode}
		for _, e := range v {
			en, err := yamlNode(e, k)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, en)
		}
		return n, nil
	default:
		n := &yaml.Node{}
		err := n.Encode(v)
		return n, err
	}
}
