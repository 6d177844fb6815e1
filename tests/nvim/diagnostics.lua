-- Headless Neovim (0.7 or later) drives `pt2lsp serve` like a user would: open a file with an
-- export problem, wait for its diagnostic, fix the line, wait for the diagnostic to go away.
--
-- Environment: PT2LSP_BIN (the binary), PT2LSP_FILE (the Python file), PT2LSP_CODE (the rule
-- code to expect), PT2LSP_FIXED_LINE and PT2LSP_LINE (0-based line to replace with it).
-- Exits 0 on success; on failure writes the reason to stderr and exits 1.

local function fail(message)
  io.stderr:write("nvim test failed: " .. message .. "\n")
  vim.cmd("cquit 1")
end

local bin = os.getenv("PT2LSP_BIN")
local file = os.getenv("PT2LSP_FILE")
local code = os.getenv("PT2LSP_CODE") or "PT001"
local line = tonumber(os.getenv("PT2LSP_LINE") or "0")
local fixed = os.getenv("PT2LSP_FIXED_LINE")
if not bin or not file then
  fail("PT2LSP_BIN and PT2LSP_FILE must be set")
end

vim.cmd("edit " .. vim.fn.fnameescape(file))
local bufnr = vim.api.nvim_get_current_buf()

local client_id = vim.lsp.start_client({
  name = "pt2lsp",
  cmd = { bin, "serve" },
  root_dir = vim.fn.fnamemodify(file, ":p:h"),
})
if not client_id then
  fail("vim.lsp.start_client returned nil")
end
vim.lsp.buf_attach_client(bufnr, client_id)

-- Neovim 0.7 keeps the LSP code under user_data; later versions also copy it to `code`.
local function codes()
  local found = {}
  for _, diagnostic in ipairs(vim.diagnostic.get(bufnr)) do
    local lsp = diagnostic.user_data and diagnostic.user_data.lsp or {}
    table.insert(found, { code = diagnostic.code or lsp.code, lnum = diagnostic.lnum })
  end
  return found
end

local function has_code()
  for _, found in ipairs(codes()) do
    if found.code == code and found.lnum == line then
      return true
    end
  end
  return false
end

if not vim.wait(20000, has_code, 20) then
  fail("no " .. code .. " diagnostic on line " .. line .. " within 20 s; got " .. vim.inspect(codes()))
end

if fixed then
  vim.api.nvim_buf_set_lines(bufnr, line, line + 1, false, { fixed })
  if not vim.wait(20000, function() return not has_code() end, 20) then
    fail("the " .. code .. " diagnostic stayed after the fix; got " .. vim.inspect(codes()))
  end
end

vim.lsp.stop_client(client_id)
vim.wait(5000, function() return vim.lsp.get_client_by_id(client_id) == nil end, 20)
vim.cmd("qall!")
