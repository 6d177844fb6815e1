-- pt2lsp for Neovim: starts `pt2lsp serve` for Python buffers and adds :Pt2Export [target] and
-- :Pt2Retrace. Works on Neovim 0.7 (vim.lsp.start_client + buf_attach_client) and on 0.8 and
-- later (vim.lsp.start, which reuses a client per root).
--
--   require("pt2lsp").setup({
--     cmd = { "pt2lsp", "serve" },
--     settings = { trace = "on-save", strict = false, timeout = 60 },
--   })
--
-- A running trace shows in the statusline with require("pt2lsp").status(), e.g.
--   vim.o.statusline = "%f %{v:lua.require'pt2lsp'.status()}"
-- and its outcome as a message when it differs from the last one (`progress = "notify"`).

local M = {}

M.name = "pt2lsp"

M.defaults = {
  -- The server command.
  cmd = { "pt2lsp", "serve" },
  -- Filetypes to start the server for.
  filetypes = { "python" },
  -- The first directory upwards that holds one of these is the workspace root; without one, the
  -- file's own directory.
  root_markers = { "pyproject.toml", ".git" },
  -- pt2lsp's keys: python, trace ("on-save" | "off"), strict, timeout, select, ignore. Keys left
  -- out are decided by the project's [tool.pt2lsp] in pyproject.toml.
  settings = {},
  -- false: only add the commands, for a server started elsewhere (nvim-lspconfig, vim.lsp.config).
  autostart = true,
  -- "notify": a trace's outcome as a message when it differs from the previous trace's (its
  -- problems with file:line, or why it failed); "statusline": only status(); false: neither.
  progress = "notify",
  -- Prefix each diagnostic's virtual text and float with its rule code ("PT101: ..."), unless
  -- the user's vim.diagnostic.config() already formats them.
  show_codes = true,
  -- Tensor shapes as inlay hints after assignments (`h = self.proj(x)  : [batch, seq, 64]`):
  -- Neovim's own inlay hints on 0.10 and later, end-of-line virtual text before.
  inlay_hints = true,
  -- Buffer-local mappings set when the server attaches, as nvim-lspconfig's README suggests
  -- (a key mapped already, by you or by Neovim, is left alone); false: none. Without them, `K` runs
  -- `keywordprg` (pydoc) in Neovim before 0.10.
  keymaps = {
    hover = "K",
    code_action = "<leader>ca",
    definition = "gd",
    next_diagnostic = "]d",
    previous_diagnostic = "[d",
    diagnostic_float = "<leader>e",
  },
  -- Passed on to the client as they are.
  on_attach = nil,
  capabilities = nil,
}

local uv = vim.uv or vim.loop
local config = vim.deepcopy(M.defaults)
-- Neovim 0.7 has no vim.lsp.start: one client per root, started here and reused.
local clients_by_root = {}

local function notify(message, level)
  vim.notify("pt2lsp: " .. message, level or vim.log.levels.INFO)
end

--- Settings as a JSON object, even when empty (an empty Lua table would be sent as []).
local function settings_object(settings)
  if settings == nil or next(settings) == nil then
    return vim.empty_dict()
  end
  return settings
end

--- The workspace root for a file: the nearest directory upwards with a root marker.
function M.find_root(path, markers)
  markers = markers or config.root_markers
  local dir = vim.fn.fnamemodify(path, ":p:h")
  while true do
    for _, marker in ipairs(markers) do
      if uv.fs_stat(dir .. "/" .. marker) then
        return dir
      end
    end
    local parent = vim.fn.fnamemodify(dir, ":h")
    if parent == dir then
      return nil
    end
    dir = parent
  end
end

--- The root of a file in no marked project: Neovim's working directory when the file is under
--- it (`cd project && nvim pkg/head.py`: the export script beside the package is in the
--- workspace), else the file's directory.
function M.fallback_root(path)
  local file = vim.fn.fnamemodify(path, ":p")
  local cwd = vim.fn.fnamemodify(vim.fn.getcwd(), ":p")
  if cwd ~= "/" and string.sub(file, 1, #cwd) == cwd then
    return (string.gsub(cwd, "/$", ""))
  end
  return vim.fn.fnamemodify(path, ":p:h")
end

-- Traces in progress, by client id and progress token: their titles ("Tracing model.py").
local running = {}
-- The end message of the last trace of each title, to tell only what changed.
local last_outcome = {}

--- What the statusline shows: the running trace ("pt2lsp: Tracing model.py"), or "".
function M.status(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local client = M.client(bufnr)
  local titles = client and running[client.id] or {}
  for _, title in pairs(titles) do
    return "pt2lsp: " .. title
  end
  return ""
end

--- A trace ended with `message` ("no problems", "2 problems: a.py:5, b.py:11", "failed: why",
--- "cancelled"): told when it differs from the last trace of the same title.
function M.trace_ended(title, message)
  if type(message) ~= "string" or message == "cancelled" then
    return
  end
  local previous = last_outcome[title]
  last_outcome[title] = message
  if config.progress ~= "notify" or previous == message then
    return
  end
  local level = vim.log.levels.WARN
  if message == "no problems" then
    level = vim.log.levels.INFO
  elseif message:find("^failed") then
    level = vim.log.levels.ERROR
  end
  notify(title .. ": " .. message, level)
end

--- The `$/progress` handler: Neovim's own (the progress it keeps for other plugins), then the
--- trace's begin and end for status() and trace_ended().
local function on_progress(err, result, ctx, handler_config)
  local default = vim.lsp.handlers["$/progress"]
  if default then
    default(err, result, ctx, handler_config)
  end
  if err or type(result) ~= "table" or type(result.value) ~= "table" then
    return
  end
  local token = tostring(result.token)
  if not token:find("^pt2lsp/trace/") then
    return
  end
  local titles = running[ctx.client_id] or {}
  running[ctx.client_id] = titles
  if result.value.kind == "begin" then
    titles[token] = result.value.title or "Tracing"
  elseif result.value.kind == "end" then
    local title = titles[token] or "Tracing"
    titles[token] = nil
    M.trace_ended(title, result.value.message)
  end
  pcall(vim.cmd, "redrawstatus")
end

-- The diagnostic namespaces of pt2lsp's clients (Neovim names them by client id only).
local our_namespaces = {}

--- The rule code of a diagnostic (Neovim 0.7 keeps it under user_data.lsp only).
local function code_of(diagnostic)
  local lsp = diagnostic.user_data and diagnostic.user_data.lsp or {}
  return diagnostic.code or lsp.code
end

--- "PT101: message" for pt2lsp's diagnostics; others' messages stay as they are.
function M.format_diagnostic(diagnostic)
  local code = code_of(diagnostic)
  if our_namespaces[diagnostic.namespace] and code ~= nil and code ~= "" then
    return ("%s: %s"):format(code, diagnostic.message)
  end
  return diagnostic.message
end

--- Shows rule codes in virtual text (per client namespace) and floats (the float reads only the
--- global configuration), where the user has set no format of their own.
local function show_codes(client_id)
  local namespace = vim.lsp.diagnostic.get_namespace(client_id)
  our_namespaces[namespace] = true
  local global = vim.diagnostic.config() or {}
  local function with_format(option)
    if option == false or (type(option) == "table" and option.format ~= nil) then
      return nil
    end
    local merged = type(option) == "table" and vim.deepcopy(option) or {}
    merged.format = M.format_diagnostic
    return merged
  end
  local virtual_text = with_format(global.virtual_text)
  if virtual_text then
    vim.diagnostic.config({ virtual_text = virtual_text }, namespace)
  end
  local float = with_format(global.float)
  if float then
    vim.diagnostic.config({ float = float })
  end
end

-- Neovim 0.11 made client methods take `self`; earlier versions are called with a dot.
local function client_request(client, method, params, handler, bufnr)
  if vim.fn.has("nvim-0.11") == 1 then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

local function client_request_sync(client, method, params, timeout_ms, bufnr)
  if vim.fn.has("nvim-0.11") == 1 then
    return client:request_sync(method, params, timeout_ms, bufnr)
  end
  return client.request_sync(method, params, timeout_ms, bufnr)
end

-- Inlay hints drawn as end-of-line virtual text, for Neovim before 0.10 (no inlay hint API).
local hints_namespace = vim.api.nvim_create_namespace("pt2lsp_inlay_hints")
local hints_pending = {}

--- Asks the server for a buffer's inlay hints and draws them at the ends of their lines.
function M.refresh_inlay_hints(bufnr)
  local client = M.client(bufnr)
  if not client or not vim.api.nvim_buf_is_loaded(bufnr) then
    return
  end
  local last = vim.api.nvim_buf_line_count(bufnr)
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    range = { start = { line = 0, character = 0 }, ["end"] = { line = last, character = 0 } },
  }
  client_request(client, "textDocument/inlayHint", params, function(err, result)
    if err or not vim.api.nvim_buf_is_loaded(bufnr) then
      return
    end
    vim.api.nvim_buf_clear_namespace(bufnr, hints_namespace, 0, -1)
    local by_line = {}
    for _, hint in ipairs(result or {}) do
      local label = type(hint.label) == "string" and hint.label or ""
      if type(hint.label) == "table" then
        for _, part in ipairs(hint.label) do
          label = label .. (part.value or "")
        end
      end
      local line = hint.position.line
      by_line[line] = by_line[line] and (by_line[line] .. " " .. label) or label
    end
    for line, text in pairs(by_line) do
      if line < vim.api.nvim_buf_line_count(bufnr) then
        vim.api.nvim_buf_set_extmark(bufnr, hints_namespace, line, 0, {
          virt_text = { { text, "Comment" } },
          virt_text_pos = "eol",
        })
      end
    end
  end, bufnr)
end

--- The inlay hints drawn in a buffer (before Neovim 0.10): { {line, text}, ... }.
function M.drawn_inlay_hints(bufnr)
  local drawn = {}
  for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(bufnr, hints_namespace, 0, -1, { details = true })) do
    local text = ""
    for _, chunk in ipairs(mark[4].virt_text or {}) do
      text = text .. chunk[1]
    end
    table.insert(drawn, { mark[2], text })
  end
  return drawn
end

-- After edits settle (and on save, when a trace may bring the exported program's shapes).
local function schedule_inlay_hints(bufnr, delay)
  if hints_pending[bufnr] then
    return
  end
  hints_pending[bufnr] = true
  vim.defer_fn(function()
    hints_pending[bufnr] = nil
    M.refresh_inlay_hints(bufnr)
  end, delay)
end

local function enable_inlay_hints(client, bufnr)
  if vim.lsp.inlay_hint and vim.lsp.inlay_hint.enable then
    pcall(vim.lsp.inlay_hint.enable, true, { bufnr = bufnr })
    return
  end
  local group = vim.api.nvim_create_augroup("pt2lsp_inlay_hints_" .. bufnr, { clear = true })
  vim.api.nvim_create_autocmd({ "TextChanged", "InsertLeave", "BufWritePost" }, {
    group = group,
    buffer = bufnr,
    callback = function()
      schedule_inlay_hints(bufnr, 300)
    end,
  })
  schedule_inlay_hints(bufnr, 100)
end

-- The server asks for hints again when a trace brings the exported program's shapes.
local function on_inlay_hint_refresh(err, result, ctx)
  if not (vim.lsp.inlay_hint and vim.lsp.inlay_hint.enable) then
    for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
      local client = M.client(bufnr)
      if client and client.id == ctx.client_id then
        schedule_inlay_hints(bufnr, 0)
      end
    end
  end
  return vim.NIL
end

--- The mappings of `config.keymaps` in `bufnr`, where the buffer has none of its own.
local function map_keys(bufnr)
  if not config.keymaps then
    return
  end
  -- Neovim 0.11 moves diagnostics with vim.diagnostic.jump; goto_next/goto_prev before.
  local function jump(count, fallback)
    if vim.diagnostic.jump then
      return function()
        vim.diagnostic.jump({ count = count, float = true })
      end
    end
    return fallback
  end
  local actions = {
    hover = vim.lsp.buf.hover,
    code_action = vim.lsp.buf.code_action,
    definition = vim.lsp.buf.definition,
    next_diagnostic = jump(1, vim.diagnostic.goto_next),
    previous_diagnostic = jump(-1, vim.diagnostic.goto_prev),
    diagnostic_float = vim.diagnostic.open_float,
  }
  for action, lhs in pairs(config.keymaps) do
    local rhs = actions[action]
    -- A key mapped already (by the user, or by Neovim's own defaults) is left alone.
    if rhs and type(lhs) == "string" and lhs ~= "" and vim.fn.maparg(lhs, "n") == "" then
      vim.api.nvim_buf_set_keymap(bufnr, "n", lhs, "", {
        noremap = true,
        silent = true,
        callback = rhs,
        desc = "pt2lsp: " .. action:gsub("_", " "),
      })
    end
  end
end

local function on_attach(client, bufnr)
  map_keys(bufnr)
  if config.show_codes then
    show_codes(client.id)
  end
  if config.inlay_hints then
    enable_inlay_hints(client, bufnr)
  end
  if config.on_attach then
    config.on_attach(client, bufnr)
  end
end

--- The client configuration for a file in `root`.
function M.client_config(root)
  local settings = settings_object(config.settings)
  return {
    name = M.name,
    cmd = config.cmd,
    root_dir = root,
    -- The server reads the same keys from either; initializationOptions arrive first, and
    -- `settings` answers workspace/configuration and is pushed by Neovim after initialize.
    init_options = { pt2lsp = settings },
    settings = { pt2lsp = settings },
    capabilities = config.capabilities,
    on_attach = on_attach,
    handlers = { ["$/progress"] = on_progress, ["workspace/inlayHint/refresh"] = on_inlay_hint_refresh },
  }
end

local function is_alive(id)
  local client = id and vim.lsp.get_client_by_id(id)
  return client ~= nil and not client.is_stopped()
end

--- Starts the server for a buffer (or attaches the one already running for its root).
--- Returns the client id, or nil for buffers that are not files.
function M.attach(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == "" or vim.bo[bufnr].buftype ~= "" then
    return nil
  end
  if vim.fn.executable(config.cmd[1]) ~= 1 then
    notify("cannot start `" .. config.cmd[1] .. "`: not found or not executable (set cmd in setup())", vim.log.levels.ERROR)
    return nil
  end
  local root = M.find_root(name) or M.fallback_root(name)
  local client_config = M.client_config(root)
  if vim.lsp.start then
    return vim.lsp.start(client_config, { bufnr = bufnr })
  end
  local id = clients_by_root[root]
  if not is_alive(id) then
    id = vim.lsp.start_client(client_config)
    if not id then
      notify("the server failed to start: " .. table.concat(config.cmd, " "), vim.log.levels.ERROR)
      return nil
    end
    clients_by_root[root] = id
  end
  vim.lsp.buf_attach_client(bufnr, id)
  return id
end

--- The pt2lsp client attached to a buffer, if any.
function M.client(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  if vim.lsp.get_clients then
    return vim.lsp.get_clients({ bufnr = bufnr, name = M.name })[1]
  end
  for _, client in pairs(vim.lsp.buf_get_clients(bufnr)) do
    if client.name == M.name then
      return client
    end
  end
  return nil
end

--- True when the server's error means it has no such command (yet).
local function is_unsupported(err)
  local message = type(err.message) == "string" and err.message or ""
  return err.code == -32601 or message:find("unknown command", 1, true) ~= nil
end

--- The problems a failed pt2lsp.exportPt2 lists in its error's data: { file, line, place, code,
--- message } each, `place` being `file:line` relative to the project.
function M.export_problems(err)
  local data = type(err) == "table" and err.data or nil
  local problems = {}
  if type(data) ~= "table" or type(data.diagnostics) ~= "table" then
    return problems
  end
  for _, item in ipairs(data.diagnostics) do
    if type(item) == "table" and item.file ~= nil and item.line ~= nil then
      table.insert(problems, {
        file = tostring(item.file),
        line = tonumber(item.line) or 1,
        place = type(item.place) == "string" and item.place or (tostring(item.file) .. ":" .. tostring(item.line)),
        code = tostring(item.code or ""),
        message = tostring(item.message or ""),
      })
    end
  end
  return problems
end

--- Sends workspace/executeCommand; the server's error, if any, is shown as it is (a failed
--- export: each problem with its file and line).
function M.execute(bufnr, command, arguments, on_result)
  local client = M.client(bufnr)
  if not client then
    notify("not attached to this buffer (is it a Python file?)", vim.log.levels.ERROR)
    return false
  end
  client_request(client, "workspace/executeCommand", { command = command, arguments = arguments }, function(err, result)
    if err then
      local said = err.message or vim.inspect(err)
      local problems = M.export_problems(err)
      if command == "pt2lsp.exportPt2" and #problems > 0 then
        -- Each problem where it is, as a line of the message and an entry of the quickfix list.
        local lines, items = {}, {}
        for _, problem in ipairs(problems) do
          table.insert(lines, ("%s: %s %s"):format(problem.place, problem.code, problem.message))
          table.insert(items, { filename = problem.file, lnum = problem.line, text = problem.code .. " " .. problem.message })
        end
        vim.fn.setqflist({}, " ", { title = "pt2lsp: export", items = items })
        notify(("%s failed, %d problem%s:\n%s"):format(command, #problems, #problems == 1 and "" or "s", table.concat(lines, "\n")), vim.log.levels.ERROR)
        return
      end
      if is_unsupported(err) then
        notify(("this server does not support %s yet (update pt2lsp): %s"):format(command, said), vim.log.levels.ERROR)
      else
        notify(("%s failed: %s"):format(command, said), vim.log.levels.ERROR)
      end
      return
    end
    if on_result then
      on_result(result)
    end
  end, bufnr)
  return true
end

-- The deployment targets that write an artefact of their own (`pt2lsp export --target`), in the
-- server's order; `pt2` is the .pt2 itself and `core-aten` a check.
M.export_targets = { "onnx", "aoti", "executorch" }

--- The deployment targets configured for a buffer's entrypoints, as the server offers them: the
--- target (fourth argument) of each pt2lsp.exportPt2 code lens, in the server's order.
function M.configured_targets(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local client = M.client(bufnr)
  if not client then
    return {}
  end
  local params = { textDocument = { uri = vim.uri_from_bufnr(bufnr) } }
  local answer = client_request_sync(client, "textDocument/codeLens", params, 1000, bufnr)
  local found, seen = {}, {}
  for _, lens in ipairs(answer and answer.result or {}) do
    local command = lens.command or {}
    local target = command.command == "pt2lsp.exportPt2" and type(command.arguments) == "table" and command.arguments[4]
    if type(target) == "string" and not seen[target] then
      seen[target] = true
      table.insert(found, target)
    end
  end
  return found
end

--- Completion of :Pt2Export's arguments: the buffer's configured targets first, then the other
--- targets that write an artefact, then files.
function M.complete_export(arglead)
  local out, seen = {}, {}
  local targets = M.configured_targets(0)
  vim.list_extend(targets, vim.deepcopy(M.export_targets))
  for _, target in ipairs(targets) do
    if not seen[target] and target:sub(1, #arglead) == arglead then
      seen[target] = true
      table.insert(out, target)
    end
  end
  vim.list_extend(out, vim.fn.getcompletion(arglead, "file"))
  return out
end

--- :Pt2Export's arguments in any order: a target's name (`executorch`), then the output and the
--- entrypoint in that order. Returns output, entry, target.
function M.export_arguments(fargs)
  local target, rest = nil, {}
  for _, argument in ipairs(fargs or {}) do
    if target == nil and vim.tbl_contains(M.export_targets, argument:lower()) then
      target = argument:lower()
    else
      table.insert(rest, argument)
    end
  end
  return rest[1], rest[2], target
end

--- :Pt2Export [target] [output] [entrypoint] — exports the current file's model to a .pt2 file,
--- or to a target's artefact (`onnx`: .onnx, `aoti`: .aoti.pt2, `executorch`: .pte).
function M.export(output, entry, bufnr, target)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local name = vim.api.nvim_buf_get_name(bufnr)
  local function run(path)
    if path == nil then
      return -- cancelled
    end
    -- Empty: the server chooses, by the rule `pt2lsp export` follows (the script's own save
    -- path, `out-dir`, else beside the file), so the editor and the command write one file.
    local destination = vim.NIL
    if path ~= "" then
      path = vim.fn.fnamemodify(vim.fn.expand(path), ":p")
      destination = path
    end
    -- The server exports the file as saved.
    if vim.bo[bufnr].modified then
      vim.api.nvim_buf_call(bufnr, function()
        vim.cmd("silent update")
      end)
    end
    local uri = vim.uri_from_bufnr(bufnr)
    local arguments = { uri, entry or vim.NIL, destination }
    if target then
      table.insert(arguments, target)
    end
    M.execute(bufnr, "pt2lsp.exportPt2", arguments, function(result)
      -- A server that reports the export has shown its own message (size, node count).
      if type(result) ~= "table" or result.status ~= "exported" then
        notify("exported " .. vim.fn.fnamemodify(name, ":t") .. (path ~= "" and (" to " .. path) or ""))
      end
    end)
  end
  if output and output ~= "" then
    return run(output)
  end
  -- A target names its artefact after the .pt2 the server would write: nothing to ask.
  if target then
    return run("")
  end
  vim.ui.input({ prompt = "Export model to (empty: the project's default): ", default = "", completion = "file" }, run)
end

--- :Pt2Retrace — runs the tracer again on the current file.
function M.retrace(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  M.execute(bufnr, "pt2lsp.retrace", { vim.uri_from_bufnr(bufnr) }, function()
    notify("retrace of " .. vim.fn.fnamemodify(vim.api.nvim_buf_get_name(bufnr), ":t") .. " started")
  end)
end

function M.setup(opts)
  config = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts or {})
  -- A list replaces the default rather than merging with it index by index.
  if opts and opts.cmd then
    config.cmd = opts.cmd
  end
  if opts and opts.root_markers then
    config.root_markers = opts.root_markers
  end
  if opts and opts.filetypes then
    config.filetypes = opts.filetypes
  end

  vim.api.nvim_create_user_command("Pt2Export", function(args)
    local output, entry, target = M.export_arguments(args.fargs)
    M.export(output, entry, nil, target)
  end, {
    nargs = "*",
    complete = M.complete_export,
    desc = "pt2lsp: export the model to a .pt2 file or a target's artefact ([target] [output] [entrypoint])",
  })
  vim.api.nvim_create_user_command("Pt2Retrace", function()
    M.retrace()
  end, { nargs = 0, desc = "pt2lsp: run the tracer again on this file" })

  local group = vim.api.nvim_create_augroup("pt2lsp", { clear = true })
  if not config.autostart then
    return
  end
  vim.api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = config.filetypes,
    callback = function(args)
      M.attach(args.buf)
    end,
    desc = "Start pt2lsp for this buffer",
  })

  -- Buffers opened before setup() ran get the server too.
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and vim.tbl_contains(config.filetypes, vim.bo[bufnr].filetype) then
      M.attach(bufnr)
    end
  end
end

return M
