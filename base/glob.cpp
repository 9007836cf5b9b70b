#include "base/glob.h"

namespace hotlink::base {

namespace {

Error bad(std::string why) { return make_error(ErrorCode::BadRequest, std::move(why)); }

// The bytes of a set's text (between its brackets, after a negation
// mark): X-Y ranges where a '-' stands second of three, other bytes as
// themselves.
Expected<std::bitset<256>> expand(std::string_view s) {
  std::bitset<256> set;
  while (s.size() >= 3) {
    auto start = static_cast<unsigned char>(s[0]), end = static_cast<unsigned char>(s[2]);
    if (s[1] != '-') {
      set.set(start);
      s.remove_prefix(1);
      continue;
    }
    if (start > end)
      return bad(std::string("the range '") + s[0] + "-" + s[2] + "' runs backwards");
    for (unsigned c = start; c <= end; ++c)
      set.set(c);
    s.remove_prefix(3);
  }
  for (char c : s)
    set.set(static_cast<unsigned char>(c));
  return set;
}

} // namespace

Expected<Glob> Glob::compile(std::string_view p) {
  Glob g;
  for (std::size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '*') {
      g.tokens_.push_back({Token::Star});
    } else if (c == '?') {
      g.tokens_.push_back({Token::AnyByte});
    } else if (c == '\\') {
      if (++i == p.size())
        return bad("it ends with a '\\' that escapes nothing");
      g.tokens_.push_back({Token::Byte, static_cast<unsigned char>(p[i])});
    } else if (c == '[') {
      // The set's first byte is never its end: "[]]" is the set of ']'.
      std::size_t first = i + 1, close = first < p.size() ? p.find(']', first + 1) : std::string_view::npos;
      if (close == std::string_view::npos)
        return bad("a '[' has no ']' after its first byte");
      std::string_view text = p.substr(first, close - first);
      bool negated = text[0] == '^' || text[0] == '!';
      auto set = expand(negated ? text.substr(1) : text);
      if (!set)
        return set.take_error();
      g.sets_.push_back(negated ? ~*set : *set);
      g.tokens_.push_back({Token::Set, 0, g.sets_.size() - 1});
      i = close;
    } else {
      g.tokens_.push_back({Token::Byte, static_cast<unsigned char>(c)});
    }
  }
  return g;
}

bool Glob::match(std::string_view s) const {
  // The classic one-star backtracking: on a mismatch, the last '*' takes
  // one more byte and the tokens after it start again.
  std::size_t t = 0, i = 0, star = std::string::npos, star_i = 0;
  while (i < s.size()) {
    if (t < tokens_.size()) {
      const Token &k = tokens_[t];
      auto b = static_cast<unsigned char>(s[i]);
      if (k.kind == Token::Star) {
        star = ++t;
        star_i = i;
        continue;
      }
      if ((k.kind == Token::Byte && k.byte == b) || k.kind == Token::AnyByte ||
          (k.kind == Token::Set && sets_[k.set].test(b))) {
        ++t, ++i;
        continue;
      }
    }
    if (star == std::string::npos)
      return false;
    t = star;
    i = ++star_i;
  }
  while (t < tokens_.size() && tokens_[t].kind == Token::Star)
    ++t;
  return t == tokens_.size();
}

} // namespace hotlink::base
