// Checks contract §5 (bad input names the argument): the spelling table of the request's
// fields (core/field.h), and each front end's spelling of a field's error.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/field.h"

namespace sparseattn {
namespace {

TEST(Field, EveryFieldHasThreeDistinctSpellings) {
  std::set<std::string> names, flags, keywords;
  for (size_t i = 0; i < kFieldCount; ++i) {
    const Field f = static_cast<Field>(i);
    const std::string name = spell(f, Spelling::name), flag = spell(f, Spelling::flag),
                      keyword = spell(f, Spelling::keyword);
    SCOPED_TRACE(name);
    EXPECT_FALSE(name.empty());
    EXPECT_TRUE(names.insert(name).second) << "two fields named " << name;
    EXPECT_TRUE(keywords.insert(keyword).second) << "two fields spelled " << keyword << "=";
    // A flag is the name with "--" and "-" for "_" (a field without a flag of its own,
    // tile, is spelled by its name); per-head lists come from --pattern-file.
    if (f == Field::tile) EXPECT_EQ(flag, "tile");
    else if (f == Field::heads) EXPECT_EQ(flag, "--pattern-file");
    else {
      std::string want = "--" + name;
      for (char& c : want)
        if (c == '_') c = '-';
      EXPECT_EQ(flag, want);
      EXPECT_TRUE(flags.insert(flag).second);
    }
  }
}

TEST(Field, KeywordsDifferFromNamesOnlyWherePythonWritesThemOtherwise) {
  // `global` is a Python keyword; the (left, right) window is `left=`, `right=` in
  // Pattern.window / longformer / random (FlashAttention's window_size=(left, right)), so a
  // Python error names what its caller wrote. These are the deliberate differences.
  EXPECT_EQ(spell(Field::global, Spelling::keyword), "global_tokens");
  EXPECT_EQ(spell(Field::window_left, Spelling::keyword), "left");
  EXPECT_EQ(spell(Field::window_right, Spelling::keyword), "right");
  for (size_t i = 0; i < kFieldCount; ++i) {
    const Field f = static_cast<Field>(i);
    if (f == Field::global || f == Field::window_left || f == Field::window_right) continue;
    EXPECT_EQ(spell(f, Spelling::keyword), spell(f, Spelling::name));
  }
}

TEST(Field, ThePatternFieldsOfTheModernKinds) {
  EXPECT_EQ(spell(Field::window_left, Spelling::name), "window_left");
  EXPECT_EQ(spell(Field::window_left, Spelling::flag), "--window-left");
  EXPECT_EQ(spell(Field::window_right, Spelling::flag), "--window-right");
  EXPECT_EQ(spell(Field::chunk_size, Spelling::flag), "--chunk-size");
  EXPECT_EQ(spell(Field::chunk_size, Spelling::keyword), "chunk_size");
  EXPECT_EQ(spell(Field::kernel_size, Spelling::name), "kernel_size");
  EXPECT_EQ(spell(Field::kernel_size, Spelling::flag), "--kernel-size");
  const FieldError e(Field::window_left, "", "-2", "must be an integer >= -1");
  EXPECT_STREQ(e.spelled(Spelling::keyword).what(), "invalid left = -2: must be an integer >= -1");
  EXPECT_STREQ(e.spelled(Spelling::flag).what(),
               "invalid --window-left = -2: must be an integer >= -1");
  EXPECT_EQ(e.at_head(2).argument_as(Spelling::name), "heads[2].window_left");
}

// spell_flag: a field's flag by its row, any other flag by the shared rule (the Python
// parity test, python/tests/test_parity.py, maps every CLI option with it).
TEST(Field, SpellFlagUsesTheTableThenTheRule) {
  EXPECT_EQ(spell_flag("--global", Spelling::keyword), "global_tokens");
  EXPECT_EQ(spell_flag("--global", Spelling::name), "global");
  EXPECT_EQ(spell_flag("--pattern-file", Spelling::keyword), "heads");
  EXPECT_EQ(spell_flag("--num-random-blocks", Spelling::keyword), "num_random_blocks");
  EXPECT_EQ(spell_flag("--max-seconds", Spelling::keyword), "max_seconds");
  EXPECT_EQ(spell_flag("--max-seconds", Spelling::name), "max_seconds");
  EXPECT_EQ(spell_flag("--max-seconds", Spelling::flag), "--max-seconds");
  for (size_t i = 0; i < kFieldCount; ++i) {
    const Field f = static_cast<Field>(i);
    if (spell(f, Spelling::flag).rfind("--", 0) != 0) continue;  // tile: no flag
    EXPECT_EQ(spell_flag(spell(f, Spelling::flag), Spelling::keyword), spell(f, Spelling::keyword));
  }
  size_t count = 0;
  const FieldSpelling* rows = field_spellings(&count);
  ASSERT_EQ(count, kFieldCount);
  EXPECT_EQ(std::string(rows[static_cast<size_t>(Field::global)].keyword), "global_tokens");
}

TEST(FieldError, SpelledByEachFrontEnd) {
  const FieldError e(Field::num_random_blocks, "", "-2", "must be an integer >= 0");
  EXPECT_STREQ(e.what(), "invalid num_random_blocks = -2: must be an integer >= 0");
  EXPECT_STREQ(e.spelled(Spelling::flag).what(),
               "invalid --num-random-blocks = -2: must be an integer >= 0");
  EXPECT_EQ(e.spelled(Spelling::flag).argument(), "--num-random-blocks");
  EXPECT_STREQ(e.spelled(Spelling::keyword).what(),
               "invalid num_random_blocks = -2: must be an integer >= 0");

  const FieldError g(Field::global, "[1]", "-3", "must be a token position, an integer >= 0");
  EXPECT_EQ(g.argument_as(Spelling::flag), "--global[1]");
  EXPECT_EQ(g.argument_as(Spelling::keyword), "global_tokens[1]");
  EXPECT_EQ(g.argument_as(Spelling::name), "global[1]");
}

TEST(FieldError, AHeadOfAPerHeadPatternIsNamedByItsIndex) {
  const FieldError e = FieldError(Field::window, "", "-1", "must be an integer >= 0").at_head(3);
  EXPECT_EQ(e.head(), 3);
  EXPECT_EQ(e.field(), Field::window);
  EXPECT_STREQ(e.what(), "invalid heads[3].window = -1: must be an integer >= 0");
  EXPECT_EQ(e.argument_as(Spelling::keyword), "heads[3].window");
  EXPECT_EQ(e.argument_as(Spelling::flag), "--pattern-file: heads[3].window");
  EXPECT_EQ(FieldError(Field::global, "[0]", "20", "...").at_head(1).argument_as(Spelling::keyword),
            "heads[1].global_tokens[0]");
  // The detail stays with the field: heads[0].random_table shape.
  EXPECT_EQ(FieldError(Field::random_table, " shape", "[2]", "...").at_head(0).argument(),
            "heads[0].random_table shape");
}

}  // namespace
}  // namespace sparseattn
