-- Headless Neovim with the editors/nvim plugin, as a user has it: setup(), open a model with a
-- data-dependent `if`, see PT101 on its line, apply "Ignore PT101 on this line", see the comment
-- appear and the diagnostic go; then :Pt2Retrace and :Pt2Export answer with a message.
--
-- Environment: PT2LSP_BIN (the server), PT2LSP_PLUGIN (editors/nvim), PT2LSP_PROJECT (a
-- directory with pyproject.toml) and PT2LSP_FILE (a model below it), PT2LSP_LINE (0-based line
-- of the PT101). Exits 0 on success; on failure writes the reason to stderr and exits 1.

local function fail(message)
  io.stderr:write("nvim plugin test failed: " .. message .. "\n")
  vim.cmd("cquit 1")
end

local function check(step, ok, message)
  if not ok then
    fail(step .. ": " .. message)
  end
  io.stdout:write("ok - " .. step .. "\n")
end

local bin = os.getenv("PT2LSP_BIN")
local plugin = os.getenv("PT2LSP_PLUGIN")
local project = os.getenv("PT2LSP_PROJECT")
local file = os.getenv("PT2LSP_FILE")
local line = tonumber(os.getenv("PT2LSP_LINE") or "")
if not (bin and plugin and project and file and line) then
  fail("PT2LSP_BIN, PT2LSP_PLUGIN, PT2LSP_PROJECT, PT2LSP_FILE and PT2LSP_LINE must be set")
end

-- Messages the plugin shows, kept for the checks below.
local notes = {}
vim.notify = function(message, level)
  table.insert(notes, { message = message, level = level })
end

vim.opt.runtimepath:prepend(plugin)
require("pt2lsp").setup({ cmd = { bin, "serve" }, settings = { trace = "off" } })

vim.cmd("edit " .. vim.fn.fnameescape(file))
local bufnr = vim.api.nvim_get_current_buf()
check("filetype", vim.bo[bufnr].filetype == "python", "the fixture is not detected as Python")

local client
vim.wait(10000, function()
  client = require("pt2lsp").client(bufnr)
  return client ~= nil
end, 20)
check("attached", client ~= nil, "no pt2lsp client attached to the buffer within 10 s")
check(
  "root",
  vim.fn.resolve(client.config.root_dir) == vim.fn.resolve(project),
  "root_dir is " .. tostring(client.config.root_dir) .. ", expected the pyproject.toml directory " .. project
)

-- Neovim 0.7 keeps the LSP diagnostic under user_data; it is what the server wants back.
local function pt101()
  for _, diagnostic in ipairs(vim.diagnostic.get(bufnr, { lnum = line })) do
    local lsp = diagnostic.user_data and diagnostic.user_data.lsp or {}
    if (diagnostic.code or lsp.code) == "PT101" then
      return diagnostic, lsp
    end
  end
  return nil
end

local function all_codes()
  local found = {}
  for _, diagnostic in ipairs(vim.diagnostic.get(bufnr)) do
    local lsp = diagnostic.user_data and diagnostic.user_data.lsp or {}
    table.insert(found, (diagnostic.code or lsp.code) .. "@" .. diagnostic.lnum)
  end
  return table.concat(found, " ")
end

check("diagnostic", vim.wait(20000, function() return pt101() ~= nil end, 20),
  "no PT101 on line " .. line .. " within 20 s; got: " .. all_codes())

local before = vim.api.nvim_buf_get_lines(bufnr, line, line + 1, false)[1]
local title = "Ignore PT101 on this line"
vim.api.nvim_win_set_cursor(0, { line + 1, 0 })
if vim.fn.has("nvim-0.8") == 1 then
  -- What a user runs: the code action menu, narrowed to one action and applied.
  vim.lsp.buf.code_action({
    context = { only = { "quickfix" } },
    filter = function(action) return action.title == title end,
    apply = true,
  })
else
  -- Neovim 0.7's code_action has no filter or apply: request and apply the edit as it would,
  -- with the line's diagnostics in LSP form (0.7 keeps only part of them under user_data).
  local diagnostic = pt101()
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    range = {
      start = { line = line, character = diagnostic.col },
      ["end"] = { line = diagnostic.end_lnum, character = diagnostic.end_col },
    },
    context = { diagnostics = vim.lsp.diagnostic.get_line_diagnostics(bufnr, line), only = { "quickfix" } },
  }
  local responses = vim.lsp.buf_request_sync(bufnr, "textDocument/codeAction", params, 10000) or {}
  local chosen
  local titles = {}
  for _, response in pairs(responses) do
    check("code action request", response.err == nil, vim.inspect(response.err))
    for _, action in ipairs(response.result or {}) do
      table.insert(titles, action.title)
      if action.title == title then
        chosen = action
      end
    end
  end
  check("code action offered", chosen ~= nil and chosen.edit ~= nil,
    "no \"" .. title .. "\" action with an edit; got: " .. vim.inspect(titles))
  vim.lsp.util.apply_workspace_edit(chosen.edit, client.offset_encoding)
end

local after
check("buffer changed", vim.wait(5000, function()
  after = vim.api.nvim_buf_get_lines(bufnr, line, line + 1, false)[1]
  return after ~= before
end, 20), "line " .. line .. " is still " .. vim.inspect(before))
check("suppression comment", after:find("# pt2lsp: ignore[PT101]", 1, true) ~= nil
  and after:sub(1, #before) == before, "line became " .. vim.inspect(after))
check("diagnostic cleared", vim.wait(20000, function() return pt101() == nil end, 20),
  "PT101 stayed after the edit; got: " .. all_codes())

-- The server may or may not support these commands yet; either way the user hears back.
local function command_answers(command, pattern)
  notes = {}
  vim.cmd(command)
  local heard = vim.wait(10000, function()
    for _, note in ipairs(notes) do
      if note.message:find(pattern) then
        return true
      end
    end
    return false
  end, 20)
  check(command, heard, "no message matching " .. pattern .. " within 10 s; got " .. vim.inspect(notes))
  io.stdout:write("   " .. notes[#notes].message .. "\n")
end
command_answers("Pt2Retrace", "^pt2lsp: .*retrace")
command_answers("Pt2Export " .. vim.fn.fnameescape(project .. "/model.pt2"), "^pt2lsp: .*export")

local id = client.id
vim.lsp.stop_client(id)
vim.wait(5000, function() return vim.lsp.get_client_by_id(id) == nil end, 20)
vim.cmd("qall!")
