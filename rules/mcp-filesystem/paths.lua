-- mcp-filesystem: what the gate knows about the file system, extracted from
-- the outputs of @modelcontextprotocol/server-filesystem. Only successful
-- results carry "structuredContent" ({content = text}); an error result is a
-- bare string, so every extractor ignores non-table outputs and a failed call
-- never counts as evidence.
--
-- Facts written (paths as the client gave them, trailing "/" removed):
--   identifier fs.allowed_directory.<dir> = <dir>   (list_allowed_directories)
--   fact fs.listed.<dir> = true                     (list_directory of <dir>)
--   fact fs.entry.<dir>/<name> = "file" | "dir"     (its entries)
--   fact fs.known.<path> = "read" | "written"       (the agent has seen its content)

local function norm(p)
  if type(p) ~= "string" then return nil end
  if #p > 1 then p = p:gsub("/+$", "") end
  return p
end

local function text_of(output)
  if type(output) ~= "table" or type(output.content) ~= "string" then return nil end
  return output.content
end

extractor {
  id = "fs.allowed_directories",
  tools = {"list_allowed_directories"},
  extract = function(output, call)
    local text = text_of(output)
    if text == nil then return {} end
    local out = {}
    for line in text:gmatch("[^\n]+") do
      local dir = norm(line)
      if dir:sub(1, 1) == "/" then
        out[#out + 1] = {category = "identifier", key = "fs.allowed_directory." .. dir, value = dir}
      end
    end
    return out
  end,
}

extractor {
  id = "fs.listing",
  tools = {"list_directory"},
  extract = function(output, call)
    local text, dir = text_of(output), norm(call.args.path)
    if text == nil or dir == nil then return {} end
    local out = {{category = "fact", key = "fs.listed." .. dir, value = true}}
    for line in text:gmatch("[^\n]+") do
      local kind, name = line:match("^%[(%u+)%] (.+)$")
      if kind ~= nil then
        out[#out + 1] = {category = "fact", key = "fs.entry." .. dir .. "/" .. name,
                         value = kind == "DIR" and "dir" or "file"}
      end
    end
    return out
  end,
}

extractor {
  id = "fs.read",
  tools = {"read_file", "read_text_file"},
  extract = function(output, call)
    local path = norm(call.args.path)
    -- A head or tail read shows part of the file: not enough to overwrite it.
    if text_of(output) == nil or path == nil or call.args.head ~= nil or call.args.tail ~= nil then
      return {}
    end
    return {{category = "fact", key = "fs.known." .. path, value = "read"},
            {category = "fact", key = "fs.entry." .. path, value = "file"}}
  end,
}

extractor {
  id = "fs.changed",
  tools = {"write_file", "edit_file", "create_directory", "move_file"},
  extract = function(output, call)
    if text_of(output) == nil then return {} end
    local a = call.args
    if call.tool == "create_directory" then
      local dir = norm(a.path)
      return {{category = "fact", key = "fs.entry." .. dir, value = "dir"},
              {category = "fact", key = "fs.listed." .. dir, value = true}}
    end
    if call.tool == "move_file" then
      local from, to = norm(a.source), norm(a.destination)
      if from == nil or to == nil then return {} end
      local out = {{category = "fact", key = "fs.entry." .. to, value = "file"},
                   {category = "fact", key = "fs.entry." .. from, op = "remove"},
                   {category = "fact", key = "fs.known." .. from, op = "remove"}}
      return out
    end
    local path = norm(a.path)
    if path == nil then return {} end
    return {{category = "fact", key = "fs.known." .. path, value = "written"},
            {category = "fact", key = "fs.entry." .. path, value = "file"}}
  end,
}
