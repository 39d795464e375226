// The rule that lets a test binary compile as merged sources (UNITY in tests/CMakeLists.txt,
// on in CI): a merged source shares its file scope with the sources merged before it, so each
// keeps its file-local names in a namespace named after the file (`namespace jx::sort_test {`
// in tests/lax/sort_test.cc), #undef's its own macros and names GoogleTest's namespace
// `::testing` (a merged header may have declared jx::testing). A source that breaks it compiles
// alone (a plain build) and breaks only the merged build; this test names it in any build.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace jx::unity_namespaces_test {
namespace {

namespace fs = std::filesystem;

struct Token {
  std::string text;
  int line;
};

bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The source's tokens, with comments, string and character literals (raw ones included) and
// preprocessor lines left out; the directives go to `directives` as (line, text).
std::vector<Token> Tokenize(const std::string& s, std::vector<Token>* directives) {
  std::vector<Token> tokens;
  int line = 1;
  bool line_start = true;  // only whitespace so far on this line
  size_t i = 0;
  auto skip_to = [&](size_t end) {
    line += static_cast<int>(std::count(s.begin() + static_cast<std::ptrdiff_t>(i),
                                        s.begin() + static_cast<std::ptrdiff_t>(std::min(end, s.size())), '\n'));
    i = std::min(end, s.size());
  };
  while (i < s.size()) {
    const char c = s[i];
    if (c == '\n') {
      ++line, ++i, line_start = true;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (c == '#' && line_start) {  // a directive, continued over backslash-newlines
      size_t end = i;
      while (end < s.size() && s[end] != '\n') end += (s[end] == '\\' && end + 1 < s.size()) ? 2 : 1;
      directives->push_back({s.substr(i, end - i), line});
      skip_to(end);
      continue;
    }
    line_start = false;
    if (s.compare(i, 2, "//") == 0) {
      skip_to(s.find('\n', i));
      continue;
    }
    if (s.compare(i, 2, "/*") == 0) {
      skip_to(s.find("*/", i + 2) + 2);
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {  // a number, digit separators included
      while (i < s.size() && (IsIdentChar(s[i]) || s[i] == '.' || (s[i] == '\'' && i + 1 < s.size() && IsIdentChar(s[i + 1])) ||
                              ((s[i] == '+' || s[i] == '-') && std::strchr("eEpP", s[i - 1]) != nullptr))) {
        ++i;
      }
      continue;
    }
    if (IsIdentChar(c)) {
      size_t end = i;
      while (end < s.size() && IsIdentChar(s[end])) ++end;
      const std::string word = s.substr(i, end - i);
      const bool raw = end < s.size() && s[end] == '"' && !word.empty() && word.back() == 'R' &&
                       (word == "R" || word == "u8R" || word == "uR" || word == "UR" || word == "LR");
      if (raw) {  // R"delim( ... )delim"
        const size_t open = s.find('(', end);
        const std::string close = ")" + s.substr(end + 1, open - end - 1) + "\"";
        i = end;
        skip_to(s.find(close, open) + close.size());
        continue;
      }
      tokens.push_back({word, line});
      i = end;
      continue;
    }
    if (c == '"' || c == '\'') {
      size_t end = i + 1;
      while (end < s.size() && s[end] != c) end += s[end] == '\\' ? 2 : 1;
      skip_to(end + 1);
      continue;
    }
    if (s.compare(i, 2, "::") == 0) {
      tokens.push_back({"::", line});
      i += 2;
      continue;
    }
    tokens.push_back({std::string(1, c), line});
    ++i;
  }
  return tokens;
}

// Declarations that, at a namespace scope other sources share, clash with (or change name
// lookup for) the sources merged around them: internal-linkage names, types, templates,
// inline definitions, using-directives and -declarations.
bool ClashesAtSharedScope(const std::vector<Token>& t, size_t k) {
  static const std::set<std::string> kKeywords = {"static", "constexpr", "const", "inline", "thread_local", "struct",
                                                  "class", "union", "enum", "typedef", "using", "template"};
  if (kKeywords.count(t[k].text) == 0) return false;
  // `template <>`: an explicit specialization, named by the type it specializes.
  return !(t[k].text == "template" && k + 2 < t.size() && t[k + 1].text == "<" && t[k + 2].text == ">");
}

// `testing::X` without a leading `::`, X one of GoogleTest's names: inside `namespace jx...`
// it looks X up in jx::testing (the shared test helpers) when a header merged earlier declared
// that namespace, and GoogleTest's X is not found.
bool NamesGoogleTestUnqualified(const std::vector<Token>& t, size_t k) {
  static const std::set<std::string> kGoogleTestNames = {
      "internal", "Message", "Test", "TestWithParam", "TestParamInfo", "Values", "ValuesIn", "Bool", "Range",
      "Combine", "UnitTest", "AssertionResult", "AssertionSuccess", "AssertionFailure", "HasSubstr",
      "ElementsAre", "ElementsAreArray", "Eq", "Not", "_"};
  return t[k].text == "testing" && k + 2 < t.size() && t[k + 1].text == "::" &&
         kGoogleTestNames.count(t[k + 2].text) != 0 && !(k > 0 && t[k - 1].text == "::");
}

// The rule's violations in one source, each "path:line: what".
std::vector<std::string> UnityViolations(const std::string& path, const std::string& text) {
  const std::string stem = fs::path(path).stem().string();
  std::vector<std::string> out;
  auto report = [&](int line, const std::string& what) { out.push_back(path + ":" + std::to_string(line) + ": " + what); };

  std::vector<Token> directives;
  const std::vector<Token> t = Tokenize(text, &directives);
  struct Scope {
    bool is_namespace;
    std::string name;  // the namespace's name as written ("" for an anonymous one)
    bool per_file;     // this namespace or one around it is named after the file
  };
  std::vector<Scope> scopes = {{true, "", false}};  // the file scope
  bool statement_start = true;
  for (size_t k = 0; k < t.size(); ++k) {
    const Scope& scope = scopes.back();
    if (t[k].text == "namespace" && scope.is_namespace) {
      std::string name;
      size_t j = k + 1;
      while (j < t.size() && t[j].text != "{" && t[j].text != "=" && t[j].text != ";") name += t[j++].text;
      if (j < t.size() && t[j].text == "{") {
        const std::string last = name.substr(name.rfind(':') == std::string::npos ? 0 : name.rfind(':') + 1);
        bool per_file = scope.per_file || (!name.empty() && last == stem);
        if (name.empty() && !per_file) {
          report(t[k].line, "anonymous namespace outside `namespace ...::" + stem +
                                " {`: its names share the scope of the sources merged with this one");
          per_file = true;  // reported once, not once per declaration in it
        }
        scopes.push_back({true, name, per_file});
      } else {  // a namespace alias: redeclaring one is harmless
        while (j < t.size() && t[j].text != ";") ++j;
      }
      k = j;
      statement_start = true;
      continue;
    }
    if (t[k].text == "{") {
      scopes.push_back({false, "", scope.per_file});
      statement_start = false;
      continue;
    }
    if (t[k].text == "}") {
      if (scopes.size() > 1) scopes.pop_back();
      statement_start = true;
      continue;
    }
    if (t[k].text == ";") {
      statement_start = true;
      continue;
    }
    if (NamesGoogleTestUnqualified(t, k) && scopes.size() > 1) {
      report(t[k].line, "`testing::" + t[k + 2].text + "` inside a namespace names jx::testing once a source merged "
                        "before this one declares it (tests/scoped_env.h): write `::testing::`");
    }
    if (statement_start && scope.is_namespace && !scope.per_file && ClashesAtSharedScope(t, k)) {
      std::string where;
      for (size_t s = 1; s < scopes.size(); ++s) where += (where.empty() ? "" : "::") + scopes[s].name;
      report(t[k].line, "`" + t[k].text + "` declaration at " +
                            (where.empty() ? std::string("file scope") : "shared scope `namespace " + where + "`") +
                            ", outside `namespace ...::" + stem + " {`");
    }
    statement_start = false;
  }

  // Macros: each #define'd name is #undef'd later in the file, or the .def file included right
  // after it (an X-macro) undefines it.
  std::map<std::string, int> defined;  // name -> line
  for (size_t d = 0; d < directives.size(); ++d) {
    std::istringstream in(directives[d].text.substr(1));
    std::string directive, name;
    in >> directive >> name;
    name = name.substr(0, name.find('('));
    if (directive == "define") {
      const bool x_macro = d + 1 < directives.size() && directives[d + 1].text.find("#include") == 0 &&
                           directives[d + 1].text.find(".def\"") != std::string::npos;
      if (!x_macro) defined[name] = directives[d].line;
    } else if (directive == "undef") {
      defined.erase(name);
    }
  }
  for (const auto& [name, line] : defined) {
    report(line, "macro " + name + " is not #undef'd: it would reach the sources merged after this one");
  }
  return out;
}

std::string Join(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

std::string Read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// binary -> the sources it merges, as tests/CMakeLists.txt lists them.
std::map<std::string, std::vector<std::string>> UnitySources() {
  std::map<std::string, std::vector<std::string>> out;
  std::ifstream in(JX_UNITY_TEST_SOURCES);
  std::string binary, source;
  while (in >> binary >> source) out[binary].push_back(source);
  return out;
}

TEST(UnityNamespacesTest, EveryMergedSourceKeepsItsNamesInItsOwnNamespace) {
  int sources = 0;
  std::vector<std::string> violations;
  for (const auto& [binary, paths] : UnitySources()) {
    std::map<std::string, std::string> by_stem;
    for (const std::string& path : paths) {
      ++sources;
      for (std::string& v : UnityViolations(path, Read(path))) violations.push_back(binary + ": " + v);
      const std::string stem = fs::path(path).stem().string();
      if (by_stem.count(stem) != 0) {
        violations.push_back(binary + ": " + path + " and " + by_stem[stem] + " share a file name (" + stem +
                             "), hence a namespace");
      }
      by_stem[stem] = path;
    }
  }
  EXPECT_GT(sources, 200) << JX_UNITY_TEST_SOURCES;
  EXPECT_TRUE(violations.empty()) << "Sources that break the merged (UNITY) build of their test binary:\n"
                                  << Join(violations);
}

// Every test binary merges its sources (CI's compile time), but for the checks that run the
// compiler or read sources themselves.
TEST(UnityNamespacesTest, EveryTestSourceIsMerged) {
  std::set<std::string> merged;
  for (const auto& [binary, paths] : UnitySources()) {
    for (const std::string& path : paths) merged.insert(fs::weakly_canonical(path).string());
  }
  const fs::path tests = fs::path(JX_SOURCE_DIR) / "tests";
  for (const auto& entry : fs::recursive_directory_iterator(tests)) {
    const std::string rel = fs::relative(entry.path(), tests).generic_string();
    if (entry.path().extension() != ".cc" || rel.rfind("layering/", 0) == 0 || rel.rfind("compile_fail/", 0) == 0 ||
        rel == "public_headers_clang.cc") {
      continue;
    }
    EXPECT_EQ(merged.count(fs::weakly_canonical(entry.path()).string()), 1u)
        << "tests/" << rel << " is in a test binary not marked UNITY in tests/CMakeLists.txt";
  }
}

TEST(UnityNamespacesTest, SharedTestHeadersAreIncludedOnce) {
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(JX_SOURCE_DIR) / "tests")) {
    if (entry.path().extension() != ".h") continue;
    const std::string text = Read(entry.path());
    EXPECT_TRUE(text.find("#pragma once") != std::string::npos || text.find("#ifndef") != std::string::npos)
        << entry.path() << " has no include guard: merged sources include it more than once";
  }
}

TEST(UnityNamespacesTest, TheCheckNamesTheFileAndLineOfEachBreak) {
  const std::string kGood = R"(#include <gtest/gtest.h>
namespace jrandom = jx::random;
namespace jx::tpu::foo_test {
namespace {
constexpr int kN = 3;  // a "namespace {" in a comment, and in a string:
const char* kText = "namespace { static";
const char* kRaw = R"hlo(
} namespace {
)hlo";
int Helper() { return 1'000 + 'x'; }
#define EXPECT_SMALL(x) EXPECT_LT(x, kN)
TEST(FooTest, Small) { EXPECT_SMALL(Helper()); }
#undef EXPECT_SMALL
}  // namespace
}  // namespace jx::tpu::foo_test
template <>
struct std::hash<jx::tpu::foo_test::Thing> {};
)";
  EXPECT_EQ(Join(UnityViolations("tests/devices/tpu/foo_test.cc", kGood)), "");
  // The same source under another name: its namespace is no longer its own.
  EXPECT_EQ(Join(UnityViolations("tests/devices/tpu/bar_test.cc", kGood)),
            "tests/devices/tpu/bar_test.cc:4: anonymous namespace outside `namespace ...::bar_test {`: its names "
            "share the scope of the sources merged with this one\n");

  const std::string kPlain = R"(namespace jx {
static int Helper() { return 1; }
namespace {
#define TWICE(x) (2 * (x))
struct Fixture {};
}  // namespace
TEST(FooTest, Twice) { EXPECT_EQ(TWICE(Helper()), 2); }
}  // namespace jx
)";
  EXPECT_EQ(Join(UnityViolations("foo_test.cc", kPlain)),
            "foo_test.cc:2: `static` declaration at shared scope `namespace jx`, outside `namespace ...::foo_test {`\n"
            "foo_test.cc:3: anonymous namespace outside `namespace ...::foo_test {`: its names share the scope of "
            "the sources merged with this one\n"
            "foo_test.cc:4: macro TWICE is not #undef'd: it would reach the sources merged after this one\n");
  const std::string kGoogleTest = R"(namespace jx::foo_test {
TEST(FooTest, Log) {
  ::testing::internal::CaptureStderr();
  testing::internal::GetCapturedStderr();
  testing::ScopedEnv env("JX_X", "1");
}
}  // namespace jx::foo_test
)";
  EXPECT_EQ(Join(UnityViolations("foo_test.cc", kGoogleTest)),
            "foo_test.cc:4: `testing::internal` inside a namespace names jx::testing once a source merged before "
            "this one declares it (tests/scoped_env.h): write `::testing::`\n");
  EXPECT_EQ(Join(UnityViolations("foo_test.cc", "using namespace jx;\n")),
            "foo_test.cc:1: `using` declaration at file scope, outside `namespace ...::foo_test {`\n");
}

}  // namespace
}  // namespace jx::unity_namespaces_test
