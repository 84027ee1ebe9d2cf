package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/urfave/cli/v2"
)

// applyConfig sets, from the TOML file --config names, every flag of flags
// that the command line did not set. Keys are flag names (listen, workers,
// drain-timeout = "30s", devices = [0, 1] or "0,1"); an unknown key, a table
// or a value of the wrong kind is an error naming the file and the key.
func applyConfig(c *cli.Context, flags []cli.Flag) error {
	path := c.String("config")
	if path == "" {
		return nil
	}
	var raw map[string]any
	if _, err := toml.DecodeFile(path, &raw); err != nil {
		return fmt.Errorf("--config %s: %w", path, err)
	}
	known := map[string]bool{}
	var names []string
	for _, f := range flags {
		if n := f.Names()[0]; n != "config" {
			known[n] = true
			names = append(names, n)
		}
	}
	slices.Sort(names)
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !known[k] {
			return fmt.Errorf("--config %s: unknown key %q (the keys are the daemon's flags: %s)", path, k, strings.Join(names, ", "))
		}
		if c.IsSet(k) {
			continue // the command line wins
		}
		v, err := configValue(raw[k])
		if err != nil {
			return fmt.Errorf("--config %s: %s: %w", path, k, err)
		}
		if err := c.Set(k, v); err != nil {
			return fmt.Errorf("--config %s: %s = %s: %w", path, k, v, err)
		}
	}
	return nil
}

// configValue is a TOML value as the flag would be written.
func configValue(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case bool:
		return strconv.FormatBool(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64), nil
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			s, err := configValue(e)
			if err != nil {
				return "", err
			}
			parts[i] = s
		}
		return strings.Join(parts, ","), nil
	}
	return "", fmt.Errorf("a %T is not a flag value (want a string, number, boolean or list)", v)
}
