// Independent readers of the export files hotlink writes, for the writers'
// fuzzer: each follows what its consumer does (lld's linker-script lexer
// for version scripts, ld64.lld's exported-symbols list reader, wasm-ld's
// --export flag; .def files are read with LLVM's own parser, the one
// lld-link uses, through exports::parse_def). Each returns the names the
// consumer would see as literal exports, or nullopt when the consumer
// would refuse the file or read a name as a pattern.
#pragma once

#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace hotlink::fuzz {

// lld/ELF/ScriptLexer.cpp: whitespace (" \t\n\v\f\r"), "/* */" and "#" to
// end of line are skipped; a token starting with '"' runs to the next '"'
// (the quotes make it a literal, not a glob); an unquoted token is a run
// of [A-Za-z0-9_.$/\~=+[]*?-!^:] or else one character.
inline std::optional<std::vector<std::string>> lex_linker_script(const std::string &text) {
  std::vector<std::string> tokens;
  std::size_t i = 0, n = text.size();
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; };
  static const char *bare = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.$/\\~=+[]*?-!^:";
  while (i < n) {
    if (text.compare(i, 2, "/*") == 0) {
      std::size_t e = text.find("*/", i + 2);
      if (e == std::string::npos)
        return std::nullopt; // unclosed comment
      i = e + 2;
    } else if (text[i] == '#') {
      std::size_t e = text.find('\n', i);
      i = e == std::string::npos ? n : e + 1;
    } else if (space(text[i])) {
      ++i;
    } else if (text[i] == '"') {
      std::size_t e = text.find('"', i + 1);
      if (e == std::string::npos)
        return std::nullopt; // unclosed quote
      tokens.push_back(text.substr(i, e + 1 - i));
      i = e + 1;
    } else {
      std::size_t j = i;
      while (j < n && text[j] != '\0' && std::strchr(bare, text[j]))
        ++j;
      if (j == i)
        j = i + 1;
      tokens.push_back(text.substr(i, j - i));
      i = j;
    }
  }
  return tokens;
}

// The version script hotlink writes: { global: "N"; ... local: *; };
// Names must be quoted (literal); anything else is refused. (':' lexes as
// part of a bare token, so "global:" is one token, as lld's parser expects.)
inline std::optional<std::vector<std::string>> read_version_script(const std::string &text) {
  auto t = lex_linker_script(text);
  if (!t)
    return std::nullopt;
  const std::vector<std::string> &v = *t;
  std::size_t i = 0;
  auto take = [&](const char *s) { return i < v.size() && v[i] == s ? (++i, true) : false; };
  if (!take("{") || !take("global:"))
    return std::nullopt;
  std::vector<std::string> names;
  while (i < v.size() && v[i].size() >= 2 && v[i].front() == '"') {
    names.push_back(v[i].substr(1, v[i].size() - 2));
    ++i;
    if (!take(";"))
      return std::nullopt;
  }
  if (!take("local:") || !take("*") || !take(";") || !take("}") || !take(";") || i != v.size())
    return std::nullopt;
  return names;
}

// ld64.lld's exported-symbols list: per line, '#' starts a comment, the
// rest is trimmed of whitespace, empty lines are skipped, and a line with
// any of "*?[]" is a glob, not a literal.
inline std::optional<std::vector<std::string>> read_macho_list(const std::string &text) {
  std::vector<std::string> names;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t nl = text.find('\n', pos);
    std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? text.size() + 1 : nl + 1;
    line = line.substr(0, line.find('#'));
    const char *ws = " \t\n\v\f\r";
    std::size_t b = line.find_first_not_of(ws);
    if (b == std::string::npos)
      continue;
    line = line.substr(b, line.find_last_not_of(ws) - b + 1);
    if (line.find_first_of("*?[]") != std::string::npos)
      return std::nullopt;
    names.push_back(line);
  }
  return names;
}

// wasm-ld reads --export=NAME as one argument: NAME is what follows '='.
inline std::optional<std::vector<std::string>> read_wasm_flags(const std::vector<std::string> &flags) {
  std::vector<std::string> names;
  for (const std::string &f : flags) {
    if (f.rfind("--export=", 0) != 0)
      return std::nullopt;
    names.push_back(f.substr(9));
  }
  return names;
}

} // namespace hotlink::fuzz
