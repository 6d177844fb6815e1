-- Headless Neovim (0.7 or later) with the pt2lsp plugin: `:Pt2Export <Tab>` completes the
-- deployment targets configured for the file (here `executorch`, from the project's
-- pyproject.toml) before the other targets, then files; with a Python that has torch,
-- `:Pt2Export executorch` writes the model's `.pte` beside it without asking where.
--
-- Environment: PT2LSP_BIN (the binary), PT2LSP_PLUGIN (editors/nvim), PT2LSP_FILE (the model, in
-- a project whose pyproject.toml configures `targets = ["executorch"]`), PT2LSP_TRACE_PYTHON (a
-- Python with torch and executorch; empty skips the export).
-- Exits 0 on success; on failure writes the reason to stderr and exits 1.

local function fail(message)
  io.stderr:write("nvim test failed: " .. message .. "\n")
  vim.cmd("cquit 1")
end

local bin = os.getenv("PT2LSP_BIN")
local plugin = os.getenv("PT2LSP_PLUGIN")
local file = os.getenv("PT2LSP_FILE")
local python = os.getenv("PT2LSP_TRACE_PYTHON") or ""
if not bin or not plugin or not file then
  fail("PT2LSP_BIN, PT2LSP_PLUGIN and PT2LSP_FILE must be set")
end

local notes = {}
vim.notify = function(message, level)
  table.insert(notes, { message = message, level = level })
end
local asked = false
vim.ui.input = function(_, on_confirm)
  asked = true
  on_confirm(nil)
end

vim.opt.runtimepath:append(plugin)
vim.cmd("filetype on")
local pt2lsp = require("pt2lsp")
-- Tracing allowed (on save only, so opening the file runs nothing): an untrusted workspace
-- (`trace = "off"`) gets no export lenses, and completion offers every target alike.
local settings = { trace = "on-save" }
if python ~= "" then
  settings.python = python
  settings.timeout = 300
end
pt2lsp.setup({ cmd = { bin, "serve" }, progress = false, settings = settings })
-- Files complete relative to the project.
vim.cmd("cd " .. vim.fn.fnameescape(vim.fn.fnamemodify(file, ":h")))
vim.cmd("edit " .. vim.fn.fnameescape(file))
local bufnr = vim.api.nvim_get_current_buf()
if not vim.wait(10000, function() return pt2lsp.client(bufnr) ~= nil end, 20) then
  fail("no pt2lsp client attached within 10 s")
end

-- The configured target first, then the others that write an artefact, then files.
local completed = {}
vim.wait(10000, function()
  completed = vim.fn.getcompletion("Pt2Export ", "cmdline")
  return completed[1] == "executorch"
end, 50)
local head = { completed[1], completed[2], completed[3] }
if not vim.deep_equal(head, { "executorch", "onnx", "aoti" }) then
  fail("completion of :Pt2Export starts " .. vim.inspect(head) .. "; all: " .. vim.inspect(completed))
end
if not vim.tbl_contains(completed, vim.fn.fnamemodify(file, ":t")) then
  fail("completion of :Pt2Export has no files: " .. vim.inspect(completed))
end
local narrowed = vim.fn.getcompletion("Pt2Export ex", "cmdline")
if narrowed[1] ~= "executorch" then
  fail("completion of :Pt2Export ex gives " .. vim.inspect(narrowed))
end
-- A target in any position; the other arguments keep their order.
local output, entry, target = pt2lsp.export_arguments({ "out.pt2", "ExecuTorch", "encoder" })
if output ~= "out.pt2" or entry ~= "encoder" or target ~= "executorch" then
  fail("arguments read as " .. vim.inspect({ output, entry, target }))
end

if python ~= "" then
  local artefact = vim.fn.fnamemodify(file, ":r") .. ".pte"
  vim.cmd("Pt2Export executorch")
  local written = vim.wait(240000, function()
    for _, note in ipairs(notes) do
      if note.level == vim.log.levels.ERROR then
        return true
      end
    end
    return vim.fn.getfsize(artefact) > 0
  end, 100)
  if not written or vim.fn.getfsize(artefact) <= 0 then
    fail("no " .. artefact .. " after :Pt2Export executorch; messages: " .. vim.inspect(notes))
  end
  if asked then
    fail(":Pt2Export executorch asked where to write")
  end
  if vim.fn.filereadable(vim.fn.fnamemodify(file, ":r") .. ".pt2") == 1 then
    fail(":Pt2Export executorch wrote a .pt2 too")
  end
  io.stdout:write("ok - :Pt2Export executorch wrote " .. artefact .. " (" .. vim.fn.getfsize(artefact) .. " bytes)\n")
end

local client = pt2lsp.client(bufnr)
if client then
  vim.lsp.stop_client(client.id)
  vim.wait(5000, function() return vim.lsp.get_client_by_id(client.id) == nil end, 20)
end
vim.cmd("qall!")
