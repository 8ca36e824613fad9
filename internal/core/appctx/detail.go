package appctx

import "encoding/json"

// DetailOf is what a status answer shows of an object: all of it but its managed fields
// and, for a Secret, its data (secrets never leave temco through the API).
func DetailOf(obj map[string]any) string {
	shown := make(map[string]any, len(obj))
	for k, v := range obj {
		shown[k] = v
	}
	if md, ok := obj["metadata"].(map[string]any); ok {
		m := make(map[string]any, len(md))
		for k, v := range md {
			if k != "managedFields" {
				m[k] = v
			}
		}
		shown["metadata"] = m
	}
	if obj["kind"] == "Secret" {
		delete(shown, "data")
		delete(shown, "stringData")
	}
	d, err := json.Marshal(shown)
	if err != nil {
		return ""
	}
	return string(d)
}

// Detail is DetailOf a stored manifest (nil if it is not a JSON object).
func Detail(manifest string) json.RawMessage {
	var obj map[string]any
	if json.Unmarshal([]byte(manifest), &obj) != nil {
		return nil
	}
	if d := DetailOf(obj); d != "" {
		return json.RawMessage(d)
	}
	return nil
}
