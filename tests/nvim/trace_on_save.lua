-- Headless Neovim (0.7 or later) with the pt2lsp plugin, as a user of an ordinary project: open
-- a module of a package that an export script reaches only through a relative import, write it
-- (`:write`), and see the failures the real exporter finds on the package's lines, here and in
-- the module the script's model calls, while the script's own save never runs.
--
-- Environment: PT2LSP_BIN (the binary), PT2LSP_PLUGIN (editors/nvim), PT2LSP_PYTHON (an
-- interpreter with torch), PT2LSP_FILE (the module to write), PT2LSP_OTHER (the other module),
-- PT2LSP_EXPECT ("CODE:line" on PT2LSP_FILE, 0-based), PT2LSP_EXPECT_OTHER (the same on
-- PT2LSP_OTHER). Exits 0 on success; on failure writes the reason to stderr and exits 1.

local function fail(message)
  io.stderr:write("nvim test failed: " .. message .. "\n")
  vim.cmd("cquit 1")
end

local bin = os.getenv("PT2LSP_BIN")
local plugin = os.getenv("PT2LSP_PLUGIN")
local python = os.getenv("PT2LSP_PYTHON")
local file = os.getenv("PT2LSP_FILE")
local other = os.getenv("PT2LSP_OTHER")
local expect = os.getenv("PT2LSP_EXPECT")
local expect_other = os.getenv("PT2LSP_EXPECT_OTHER")
if not (bin and plugin and python and file and other and expect and expect_other) then
  fail("PT2LSP_BIN, PT2LSP_PLUGIN, PT2LSP_PYTHON, PT2LSP_FILE, PT2LSP_OTHER, PT2LSP_EXPECT and PT2LSP_EXPECT_OTHER must be set")
end

vim.opt.runtimepath:append(plugin)
vim.cmd("filetype on")
require("pt2lsp").setup({
  cmd = { bin, "serve" },
  progress = false,
  settings = { python = python, trace = "on-save", timeout = 120 },
})
vim.cmd("edit " .. vim.fn.fnameescape(file))
local bufnr = vim.api.nvim_get_current_buf()

-- Traced diagnostics of a buffer (or of a file no buffer shows: Neovim keeps them on a buffer it
-- creates for the URI), as "CODE:line" strings.
local function traced(buffer)
  local found = {}
  for _, diagnostic in ipairs(vim.diagnostic.get(buffer)) do
    local lsp = diagnostic.user_data and diagnostic.user_data.lsp or {}
    local code = diagnostic.code or lsp.code
    -- The pass that found it is in the LSP diagnostic's data: "trace" or "static+trace".
    local source = (lsp.data and lsp.data.source) or ""
    if string.find(source, "trace", 1, true) then
      table.insert(found, code .. ":" .. diagnostic.lnum)
    end
  end
  return found
end

local function has(buffer, wanted)
  for _, found in ipairs(traced(buffer)) do
    if found == wanted then
      return true
    end
  end
  return false
end

local pt2lsp = require("pt2lsp")
if not vim.wait(30000, function()
  local client = pt2lsp.client(bufnr)
  return client ~= nil and client.initialized
end, 50) then
  fail("the server did not start for " .. file .. " within 30 s")
end
if #traced(bufnr) > 0 then
  fail("traced diagnostics before any save: " .. vim.inspect(traced(bufnr)))
end

vim.cmd("write")
if not vim.wait(150000, function() return has(bufnr, expect) end, 100) then
  fail("no traced " .. expect .. " in " .. file .. " within 150 s after :write; got " .. vim.inspect(traced(bufnr)))
end
local other_buffer = vim.uri_to_bufnr(vim.uri_from_fname(other))
if not vim.wait(10000, function() return has(other_buffer, expect_other) end, 100) then
  fail("no traced " .. expect_other .. " in " .. other .. "; got " .. vim.inspect(traced(other_buffer)))
end

for _, client in ipairs(vim.lsp.get_active_clients()) do
  client.stop()
end
vim.wait(5000, function() return #vim.lsp.get_active_clients() == 0 end, 50)
vim.cmd("qall!")
