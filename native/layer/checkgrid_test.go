package layer

import "testing"

func TestCheckGridNamesTheField(t *testing.T) {
	t.Parallel()
	for _, name := range Grids {
		if err := CheckGrid(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := CheckGrid("lll"); err == nil || err.Error() != `grid "lll": want ll, normal, gpus, transfer or all` {
		t.Errorf("an unknown grid: %v", err)
	}
}
