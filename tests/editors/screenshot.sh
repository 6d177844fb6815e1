#!/usr/bin/env bash
# Makes docs/images/nvim-diagnostic.png, the README's picture of what a Neovim user sees: the
# editors/nvim plugin on fixtures/examples/transformer_block.py, in tmux, with PT101's message
# open in a float. Needs tmux, nvim and Pillow (the test .venv has it); run by hand after a
# change to what the picture shows:
#
#   tests/editors/screenshot.sh [output.png]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${1:-$root/docs/images/nvim-diagnostic.png}"
python="${PYTHON:-$root/.venv/bin/python}"
bin="${PT2LSP_BIN:-$root/target/debug/pt2lsp}"
[ -x "$bin" ] || cargo build --quiet --manifest-path "$root/Cargo.toml" -p pt2lsp

work="$(mktemp -d)"
session="pt2lsp-shot-$$"
trap 'tmux kill-session -t "$session" 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/project/models"
printf '[project]\nname = "demo"\n' >"$work/project/pyproject.toml"
# The fixture's inline expectations (`# error[PT101]`) are for the test runner, not for readers.
sed -E 's/  # (error|warning)\[PT[0-9]+\]$//' "$root/fixtures/examples/transformer_block.py" \
  >"$work/project/models/transformer_block.py"

cat >"$work/init.lua" <<EOF
vim.opt.runtimepath:prepend("$root/editors/nvim")
vim.o.termguicolors = true
vim.o.number = true
vim.o.wrap = false
vim.o.signcolumn = "yes"
vim.o.laststatus = 2
vim.o.showmode = false
vim.cmd("colorscheme slate")
vim.cmd("highlight SignColumn guibg=NONE")
vim.cmd("highlight LineNr guifg=#6c6c6c guibg=NONE")
vim.cmd("highlight NormalFloat guifg=#e4e4e4 guibg=#303030")
vim.cmd("highlight FloatBorder guifg=#8a8a8a guibg=#303030")
vim.diagnostic.config({
  virtual_text = { prefix = "●" },
  float = {
    border = "rounded",
    header = "",
    -- Wrapped at words here: Neovim's float would cut words in two.
    format = function(d)
      local lines, line = {}, ""
      for word in (d.message .. " [" .. d.code .. "]"):gmatch("%S+") do
        if #line + #word + 1 > 64 and line ~= "" then
          table.insert(lines, line)
          line = word
        else
          line = line == "" and word or (line .. " " .. word)
        end
      end
      table.insert(lines, line)
      return table.concat(lines, "\\n")
    end,
  },
})
require("pt2lsp").setup({ cmd = { "$bin", "serve" }, settings = { trace = "off" } })
-- Once PT101 is shown, put the cursor on it and open its message, as \`<leader>e\` would.
vim.api.nvim_create_autocmd("DiagnosticChanged", {
  once = true,
  callback = function()
    vim.defer_fn(function()
      vim.api.nvim_win_set_cursor(0, { 24, 11 })
      vim.fn.winrestview({ topline = 12 })
    end, 300)
    -- Later, so the CursorMoved of the jump above cannot close the float.
    vim.defer_fn(function()
      if vim.fn.has("nvim-0.8") == 1 then
        vim.diagnostic.open_float({ scope = "cursor" })
      else
        vim.diagnostic.open_float(0, { scope = "cursor" })
      end
    end, 800)
  end,
})
EOF

cd "$work/project"
XDG_STATE_HOME="$work" XDG_CACHE_HOME="$work" XDG_DATA_HOME="$work" XDG_CONFIG_HOME="$work" \
  tmux -f /dev/null new-session -d -s "$session" -x 104 -y 30 \
  "nvim -n -u $work/init.lua models/transformer_block.py"
tmux set-option -t "$session" status off >/dev/null
sleep 4
tmux capture-pane -p -e -t "$session" >"$work/screen.ansi"
mkdir -p "$(dirname "$out")"
"$python" "$root/tests/editors/ansi_to_png.py" "$work/screen.ansi" "$out"
echo "wrote $out"
