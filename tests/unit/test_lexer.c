/* test_lexer: tokens, newlines that end statements, literals, lexical errors. */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "lang/lexer.h"
#include "vm/vm.h"

typedef struct Fixture {
    VM *vm;
    Arena a;
    Diag d;
    TokenList toks;
} Fixture;

static int setup(void **state)
{
    Fixture *f = test_calloc(1, sizeof *f);
    f->vm = vm_new(NULL);
    arena_init(&f->a, f->vm);
    *state = f;
    return f->vm ? 0 : -1;
}

static int teardown(void **state)
{
    Fixture *f = *state;
    arena_free(&f->a);
    vm_free(f->vm);
    test_free(f);
    return 0;
}

static const Token *lex_text(Fixture *f, const char *src)
{
    diag_init(&f->d, NULL, "test");
    f->toks = lex(&f->a, src, strlen(src), &f->d);
    return f->toks.t;
}

/* The kinds of all tokens, EOF included, must be the listed ones. */
static void expect_kinds(Fixture *f, const char *src, ...)
{
    const Token *t = lex_text(f, src);
    va_list ap;
    va_start(ap, src);
    for (size_t i = 0;; i++) {
        int k = va_arg(ap, int);
        assert_true(i < f->toks.n);
        assert_int_equal(t[i].kind, k);
        if (k == T_EOF)
            break;
    }
    va_end(ap);
}

static void names_keywords_and_positions(void **state)
{
    Fixture *f = *state;
    const Token *t = lex_text(f, "let x = fib(n)\n  while");
    assert_int_equal(t[0].kind, T_LET);
    assert_int_equal(t[1].kind, T_NAME);
    assert_int_equal(t[1].len, 1);
    assert_memory_equal(t[1].start, "x", 1);
    assert_int_equal(t[3].kind, T_NAME);
    assert_int_equal(t[3].col, 9);
    assert_int_equal(t[7].kind, T_NEWLINE);
    assert_int_equal(t[8].kind, T_WHILE);
    assert_int_equal(t[8].line, 2);
    assert_int_equal(t[8].col, 3);
    assert_true(t[8].bol);
    assert_false(t[3].bol);
    assert_int_equal(f->d.nerrors, 0);
}

static void newlines_end_statements_only_after_values(void **state)
{
    Fixture *f = *state;
    /* after a value: a NEWLINE; after an operator or comma: none */
    expect_kinds(f, "a\nb", T_NAME, T_NEWLINE, T_NAME, T_NEWLINE, T_EOF);
    expect_kinds(f, "a +\nb", T_NAME, T_PLUS, T_NAME, T_NEWLINE, T_EOF);
    /* inside ( ) none; inside { } yes */
    expect_kinds(f, "f(a\n,b)", T_NAME, T_LPAREN, T_NAME, T_COMMA, T_NAME, T_RPAREN, T_NEWLINE,
                 T_EOF);
    expect_kinds(f, "{a\nb}", T_LBRACE, T_NAME, T_NEWLINE, T_NAME, T_RBRACE, T_NEWLINE, T_EOF);
    /* a brace inside parens: statements again */
    expect_kinds(f, "f(fn() {a\nb})", T_NAME, T_LPAREN, T_FN, T_LPAREN, T_RPAREN, T_LBRACE, T_NAME,
                 T_NEWLINE, T_NAME, T_RBRACE, T_RPAREN, T_NEWLINE, T_EOF);
    /* blank lines and comments make no tokens */
    expect_kinds(f, "# only a comment\n\n\nbreak # and more\n", T_BREAK, T_NEWLINE, T_EOF);
}

static void slash_divides_after_a_value(void **state)
{
    Fixture *f = *state;
    expect_kinds(f, "a / b / c", T_NAME, T_SLASH, T_NAME, T_SLASH, T_NAME, T_NEWLINE, T_EOF);
    expect_kinds(f, "x ~ /a b/i", T_NAME, T_MATCH, T_REGEX, T_NEWLINE, T_EOF);
    const Token *t = lex_text(f, "s ~ /a\\/b/ix");
    assert_int_equal(t[2].kind, T_REGEX);
    assert_string_equal(t[2].v.str.s, "a\\/b");
    assert_string_equal(t[2].v.str.flags, "ix");
    expect_kinds(f, "(a) / 2", T_LPAREN, T_NAME, T_RPAREN, T_SLASH, T_INT, T_NEWLINE, T_EOF);
    expect_kinds(f, "x /= 2", T_NAME, T_SLASHEQ, T_INT, T_NEWLINE, T_EOF);
}

static void numbers(void **state)
{
    Fixture *f = *state;
    const Token *t = lex_text(f, "0 42 0x1F 0b101 1_000 7325551212 9223372036854775807");
    int64_t want[] = {0, 42, 31, 5, 1000, 7325551212, INT64_MAX};
    for (int i = 0; i < 7; i++) {
        assert_int_equal(t[i].kind, T_INT);
        assert_true(t[i].v.i == want[i]);
    }
    t = lex_text(f, "1.5 2e3 2.5e-3 1E2");
    double fw[] = {1.5, 2000.0, 0.0025, 100.0};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(t[i].kind, T_FLOAT);
        assert_true(t[i].v.f == fw[i]);
    }
    /* a range is not a float */
    expect_kinds(f, "0..n", T_INT, T_DOTDOT, T_NAME, T_NEWLINE, T_EOF);
    assert_int_equal(f->d.nerrors, 0);
}

static void string_escapes(void **state)
{
    Fixture *f = *state;
    const Token *t = lex_text(f, "\"a\\n\\t\\\"\\\\\\x41\\0z\\u{263A}\"");
    assert_int_equal(t[0].kind, T_STRING);
    const char want[] = "a\n\t\"\\A\0z\xe2\x98\xba";
    assert_int_equal(t[0].v.str.n, sizeof want - 1);
    assert_memory_equal(t[0].v.str.s, want, sizeof want - 1);
    /* a string may span lines; the next token knows its line */
    t = lex_text(f, "\"one\ntwo\" x");
    assert_int_equal(t[0].v.str.n, 7);
    assert_int_equal(t[1].line, 2);
}

static void errors_are_reported_and_marked(void **state)
{
    Fixture *f = *state;
    const Token *t = lex_text(f, "a @ b");
    assert_int_equal(t[1].kind, T_ERROR);
    assert_int_equal(f->d.nerrors, 1);
    assert_int_equal(f->d.msgs[0].col, 3);
    assert_string_equal(f->d.msgs[0].text, "unexpected character '@'");

    lex_text(f, "\"bad \\q\" 12abc 99999999999999999999");
    assert_int_equal(f->d.nerrors, 3);
    assert_string_equal(f->d.msgs[0].text, "bad escape '\\q' in string");
    assert_string_equal(f->d.msgs[1].text, "malformed number '12abc'");

    lex_text(f, "print(\"open");
    assert_int_equal(f->d.nerrors, 1);
    assert_true(f->d.at_eof);   /* the prompt would read another line */
    assert_string_equal(f->d.msgs[0].text, "unterminated string");
}

static void unclosed_paren_before_a_statement(void **state)
{
    Fixture *f = *state;
    /* the let on the next line ends the unclosed call with a newline */
    expect_kinds(f, "f(1\nlet x = 2", T_NAME, T_LPAREN, T_INT, T_NEWLINE, T_LET, T_NAME, T_ASSIGN,
                 T_INT, T_NEWLINE, T_EOF);
}

static void describes_tokens_for_messages(void **state)
{
    Fixture *f = *state;
    char buf[64];
    const Token *t = lex_text(f, "foo ) 12");
    assert_string_equal(tok_describe(&t[0], buf, sizeof buf), "name 'foo'");
    assert_string_equal(tok_describe(&t[1], buf, sizeof buf), "')'");
    assert_string_equal(tok_describe(&t[2], buf, sizeof buf), "number 12");
    assert_string_equal(tok_describe(&t[4], buf, sizeof buf), "end of input");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(names_keywords_and_positions, setup, teardown),
        cmocka_unit_test_setup_teardown(newlines_end_statements_only_after_values, setup, teardown),
        cmocka_unit_test_setup_teardown(slash_divides_after_a_value, setup, teardown),
        cmocka_unit_test_setup_teardown(numbers, setup, teardown),
        cmocka_unit_test_setup_teardown(string_escapes, setup, teardown),
        cmocka_unit_test_setup_teardown(errors_are_reported_and_marked, setup, teardown),
        cmocka_unit_test_setup_teardown(unclosed_paren_before_a_statement, setup, teardown),
        cmocka_unit_test_setup_teardown(describes_tokens_for_messages, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
