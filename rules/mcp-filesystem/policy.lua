-- mcp-filesystem policy: what an agent may change through
-- @modelcontextprotocol/server-filesystem (tools classified in pack.json;
-- facts from paths.lua).
--   fs.no_hidden_paths        dotfiles and dot-directories (.env, .git, .ssh)
--                             and ".." are never written
--   fs.inside_allowed_directory  every path lies under a directory the
--                             server reported with list_allowed_directories
--   fs.no_blind_overwrite     a file is written or edited only if its content
--                             was read (or written) in this conversation, or
--                             its directory was listed and it was not there
--   fs.move_to_new_path       move_file never replaces an existing entry

local WRITES = {"write_file", "edit_file", "create_directory", "move_file"}

local function norm(p)
  if #p > 1 then p = p:gsub("/+$", "") end
  return p
end

-- The path arguments of a call, normalized; nil and a reason if one is missing.
local function paths_of(call)
  local names = call.tool == "move_file" and {"source", "destination"} or {"path"}
  local out = {}
  for _, name in ipairs(names) do
    local p = call.args[name]
    if type(p) ~= "string" or p == "" then
      return nil, call.tool .. " needs a string argument '" .. name .. "'"
    end
    out[#out + 1] = norm(p)
  end
  return out
end

local function parent_of(path)
  return path:match("^(.*)/[^/]+$")
end

rule {
  id = "fs.no_hidden_paths",
  tools = WRITES,
  priority = 100,
  description = "Hidden files and directories (.env, .git, .ssh) and '..' are never changed.",
  check = function(call, ledger)
    local paths, why = paths_of(call)
    if paths == nil then return deny(why) end
    for _, p in ipairs(paths) do
      for part in p:gmatch("[^/]+") do
        if part:sub(1, 1) == "." then
          return deny("'" .. p .. "' is or lies in a hidden file or directory ('" .. part ..
                      "'); hidden paths are protected and '..' is not allowed")
        end
      end
    end
    return allow()
  end,
}

rule {
  id = "fs.inside_allowed_directory",
  tools = WRITES,
  priority = 90,
  description = "Every path lies under a directory the server reported as allowed.",
  check = function(call, ledger)
    local paths, why = paths_of(call)
    if paths == nil then return deny(why) end
    local dirs = {}
    for _, key in ipairs(ledger.keys("identifier", "fs.allowed_directory.")) do
      if ledger.verified("identifier", key) then dirs[#dirs + 1] = ledger.identifier(key) end
    end
    if #dirs == 0 then
      return deny("the allowed directories are not known yet; call list_allowed_directories first")
    end
    for _, p in ipairs(paths) do
      local inside = false
      for _, d in ipairs(dirs) do
        if p == d or p:sub(1, #d + 1) == d .. "/" or d == "/" then inside = true end
      end
      if not inside then
        return deny("'" .. p .. "' is outside the allowed directories (" .. table.concat(dirs, ", ") .. ")")
      end
    end
    return allow()
  end,
}

-- Known absent: the parent was listed in this conversation without it.
local function known_absent(ledger, path)
  local parent = parent_of(path)
  if parent == nil or parent == "" then parent = "/" end
  return ledger.fact("fs.listed." .. parent) == true and ledger.fact("fs.entry." .. path) == nil
end

rule {
  id = "fs.no_blind_overwrite",
  tools = {"write_file", "edit_file"},
  priority = 50,
  description = "A file is only written or edited after its content was read, or when it is known not to exist.",
  check = function(call, ledger)
    local paths, why = paths_of(call)
    if paths == nil then return deny(why) end
    local path = paths[1]
    if ledger.fact("fs.known." .. path) ~= nil then return allow() end
    if call.tool == "write_file" and known_absent(ledger, path) then return allow() end
    if ledger.fact("fs.entry." .. path) ~= nil then
      return deny("'" .. path .. "' exists and its content was not read in this conversation; " ..
                  "read it with read_text_file before changing it")
    end
    return deny("'" .. path .. "' may be an existing file that was not read in this conversation; " ..
                "read it with read_text_file, or list its directory to show it does not exist, " ..
                "before writing")
  end,
}

rule {
  id = "fs.move_to_new_path",
  tools = {"move_file"},
  priority = 50,
  description = "move_file only moves to a destination known not to exist.",
  check = function(call, ledger)
    local paths, why = paths_of(call)
    if paths == nil then return deny(why) end
    if not known_absent(ledger, paths[2]) then
      return deny("'" .. paths[2] .. "' is not known to be free; list its directory first " ..
                  "(move_file never replaces an existing entry)")
    end
    return allow()
  end,
}
