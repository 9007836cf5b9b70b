#include "exports/version_script.h"

#include "llvm/Support/GlobPattern.h"

#include <cctype>

namespace hotlink::exports {

namespace {

struct Token {
  std::string text;
  bool quoted = false;
  std::size_t line = 1;
};

Expected<std::vector<Token>> tokenize(const std::string &s, const std::string &input) {
  std::vector<Token> out;
  std::size_t line = 1;
  auto bad = [&](const std::string &why) {
    return make_error(ErrorCode::InvalidInput, why + " (line " + std::to_string(line) + ")", input,
                      "--version-script", "fix the version script");
  };
  for (std::size_t i = 0; i < s.size();) {
    char c = s[i];
    if (c == '\n') {
      ++line, ++i;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '#') {
      while (i < s.size() && s[i] != '\n')
        ++i;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      std::size_t end = s.find("*/", i + 2);
      if (end == std::string::npos)
        return bad("unterminated comment");
      for (std::size_t k = i; k < end; ++k)
        line += s[k] == '\n';
      i = end + 2;
    } else if (c == '"') {
      std::size_t end = s.find('"', i + 1);
      if (end == std::string::npos)
        return bad("unterminated quoted name");
      out.push_back({s.substr(i + 1, end - i - 1), true, line});
      i = end + 1;
    } else if (c == '{' || c == '}' || c == ';') {
      out.push_back({std::string(1, c), false, line});
      ++i;
    } else {
      std::size_t j = i;
      while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j])) &&
             s[j] != '{' && s[j] != '}' && s[j] != ';' && s[j] != '"')
        ++j;
      out.push_back({s.substr(i, j - i), false, line});
      i = j;
    }
  }
  return out;
}

bool is_glob(const VersionPattern &p) {
  return !p.literal && p.text.find_first_of("*?[") != std::string::npos;
}

bool matches(const VersionPattern &p, const std::string &symbol, const std::string &demangled) {
  const std::string &subject = p.cxx ? demangled : symbol;
  if (!is_glob(p))
    return p.text == subject;
  auto g = llvm::GlobPattern::create(p.text);
  if (!g) {
    llvm::consumeError(g.takeError());
    return false;
  }
  return g->match(subject);
}

} // namespace

Expected<std::vector<VersionNode>> parse_version_script(const std::string &text,
                                                        const std::string &input) {
  auto tokens = tokenize(text, input);
  if (!tokens)
    return tokens.take_error();
  const std::vector<Token> &t = tokens.value();
  std::size_t i = 0;
  auto line = [&] { return i < t.size() ? t[i].line : (t.empty() ? 1 : t.back().line); };
  auto bad = [&](const std::string &why) {
    return make_error(ErrorCode::InvalidInput, why + " (line " + std::to_string(line()) + ")", input,
                      "--version-script", "fix the version script");
  };
  auto is = [&](const char *s) { return i < t.size() && !t[i].quoted && t[i].text == s; };
  std::vector<VersionNode> nodes;
  while (i < t.size()) {
    VersionNode node;
    if (!is("{")) {
      if (t[i].quoted)
        return bad("a version name cannot be quoted");
      node.name = t[i++].text;
    }
    if (!is("{"))
      return bad("expected '{'");
    ++i;
    bool local = false;
    while (i < t.size() && !is("}")) {
      // "global:" is one token, as in lld's lexer (':' may be part of a
      // name: ns::f); "global :" is accepted too.
      if (is("global:") || is("local:")) {
        local = t[i++].text == "local:";
        continue;
      }
      if ((is("global") || is("local")) && i + 1 < t.size() && t[i + 1].text == ":" && !t[i + 1].quoted) {
        local = t[i].text == "local";
        i += 2;
        continue;
      }
      if (is("extern")) {
        ++i;
        if (i >= t.size() || !t[i].quoted)
          return bad("expected a language after extern");
        std::string lang = t[i++].text;
        if (lang != "C++" && lang != "C")
          return bad("unsupported extern language '" + lang + "'");
        if (!is("{"))
          return bad("expected '{' after extern \"" + lang + "\"");
        ++i;
        while (i < t.size() && !is("}")) {
          if (is(";")) {
            ++i;
            continue;
          }
          VersionPattern p{t[i].text, lang == "C++", t[i].quoted};
          (local ? node.local : node.global).push_back(p);
          ++i;
        }
        if (!is("}"))
          return bad("unterminated extern block");
        ++i;
        if (is(";"))
          ++i;
        continue;
      }
      if (is(";") || is("{"))
        return bad("unexpected '" + t[i].text + "'");
      VersionPattern p{t[i].text, false, t[i].quoted};
      ++i;
      if (!is(";"))
        return bad("expected ';' after '" + p.text + "'");
      ++i;
      (local ? node.local : node.global).push_back(p);
    }
    if (!is("}"))
      return bad("unterminated version node");
    ++i;
    if (i < t.size() && !is(";")) {
      if (t[i].quoted)
        return bad("a parent version cannot be quoted");
      node.parent = t[i++].text;
    }
    if (!is(";"))
      return bad("expected ';' after a version node");
    ++i;
    nodes.push_back(std::move(node));
  }
  return nodes;
}

const VersionNode *claiming_node(const std::vector<VersionNode> &nodes, const std::string &symbol,
                                 const std::string &demangled) {
  for (const VersionNode &n : nodes)
    for (const VersionPattern &p : n.global)
      if (!is_glob(p) && matches(p, symbol, demangled))
        return &n;
  // An exact local name wins over any glob.
  for (const VersionNode &n : nodes)
    for (const VersionPattern &p : n.local)
      if (!is_glob(p) && matches(p, symbol, demangled))
        return nullptr;
  // Then globs, the last node's first (lld lets the last match win), with
  // a bare "*" weakest of all.
  for (bool star : {false, true})
    for (auto n = nodes.rbegin(); n != nodes.rend(); ++n) {
      for (const VersionPattern &p : n->global)
        if (is_glob(p) && (p.text == "*") == star && matches(p, symbol, demangled))
          return &*n;
      for (const VersionPattern &p : n->local)
        if (is_glob(p) && (p.text == "*") == star && matches(p, symbol, demangled))
          return nullptr;
    }
  return nullptr;
}

bool names_local(const std::vector<VersionNode> &nodes, const std::string &symbol) {
  for (const VersionNode &n : nodes)
    for (const VersionPattern &p : n.local)
      if (!is_glob(p) && !p.cxx && p.text == symbol)
        return true;
  return false;
}

} // namespace hotlink::exports
