-- Headless Neovim (0.7 or later) with the pt2lsp plugin: open a model and see the tensor shapes
-- the server infers as inlay hints (end-of-line virtual text before Neovim 0.10, Neovim's own
-- inlay hints after).
--
-- Environment: PT2LSP_BIN (the binary), PT2LSP_PLUGIN (editors/nvim), PT2LSP_FILE (the Python
-- file), PT2LSP_LINE (0-based line) and PT2LSP_HINT (text the hint on that line must hold).
-- Exits 0 on success; on failure writes the reason to stderr and exits 1.

local function fail(message)
  io.stderr:write("nvim test failed: " .. message .. "\n")
  vim.cmd("cquit 1")
end

local bin = os.getenv("PT2LSP_BIN")
local plugin = os.getenv("PT2LSP_PLUGIN")
local file = os.getenv("PT2LSP_FILE")
local line = tonumber(os.getenv("PT2LSP_LINE") or "0")
local expected = os.getenv("PT2LSP_HINT")
if not bin or not plugin or not file or not expected then
  fail("PT2LSP_BIN, PT2LSP_PLUGIN, PT2LSP_FILE and PT2LSP_HINT must be set")
end

vim.opt.runtimepath:append(plugin)
vim.cmd("filetype on")
local pt2lsp = require("pt2lsp")
pt2lsp.setup({ cmd = { bin, "serve" }, progress = false, settings = { trace = "off" } })
vim.cmd("edit " .. vim.fn.fnameescape(file))
local bufnr = vim.api.nvim_get_current_buf()

local function hints()
  if vim.lsp.inlay_hint and vim.lsp.inlay_hint.get then
    local found = {}
    for _, item in ipairs(vim.lsp.inlay_hint.get({ bufnr = bufnr })) do
      local label = item.inlay_hint.label
      if type(label) == "table" then
        local text = ""
        for _, part in ipairs(label) do
          text = text .. part.value
        end
        label = text
      end
      table.insert(found, { item.inlay_hint.position.line, label })
    end
    return found
  end
  return pt2lsp.drawn_inlay_hints(bufnr)
end

local function shown()
  for _, hint in ipairs(hints()) do
    if hint[1] == line and string.find(hint[2], expected, 1, true) then
      return true
    end
  end
  return false
end

if not vim.wait(20000, shown, 50) then
  fail("no inlay hint holding " .. expected .. " on line " .. line .. " within 20 s; got " .. vim.inspect(hints()))
end

local client = pt2lsp.client(bufnr)
if client then
  vim.lsp.stop_client(client.id)
  vim.wait(5000, function() return vim.lsp.get_client_by_id(client.id) == nil end, 20)
end
vim.cmd("qall!")
