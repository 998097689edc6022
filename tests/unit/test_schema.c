/* tests/unit/test_schema.c — every ops.def schema parses and formats back; alias annotations
 * give the inplace / view flags; registry lookups by every spelling.
 * Layer: tests (cmocka, links libfxdb.a). The reference for the flags is the schema text
 * itself, read here with plain string searches independent of core/schema.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/fx.h"

/* The schema text as fx_schema_format writes it: SymInt prints as int, alias sets keep only
 * their letter and '!' ("(a -> *)" becomes "(a)"). */
static void normalize(const char *in, char *out, size_t cap) {
    size_t o = 0;
    for (const char *p = in; *p && o + 1 < cap;) {
        if (!strncmp(p, "SymInt", 6)) {
            memcpy(out + o, "int", 3);
            o += 3, p += 6;
        } else if (!strncmp(p, " -> *)", 6)) {
            out[o++] = ')';
            p += 6;
        } else {
            out[o++] = *p++;
        }
    }
    out[o] = 0;
}

static void test_every_schema_round_trips(void **state) {
    (void)state;
    fx_err err;
    fx_err_clear(&err);
    assert_int_equal(fx_registry_init(&err), FX_OK);
    for (int i = 0; i < FX_OP_COUNT; i++) {
        const fx_opdef *op = fx_op_get((fx_op_id)i);
        assert_non_null(op);
        assert_int_equal(op->id, i);
        /* format(parse(text)) == text, up to SymInt -> int */
        char want[1024];
        normalize(op->schema_text, want, sizeof want);
        fx_strbuf sb = FX_STRBUF_INIT;
        fx_schema_format(&sb, &op->schema);
        if (strcmp(fx_strbuf_cstr(&sb), want))
            fail_msg("op %s\n  text:      %s\n  formatted: %s", op->qualname, want,
                     fx_strbuf_cstr(&sb));
        /* and the formatted text parses to the same schema again (a fixpoint) */
        fx_schema again;
        assert_int_equal(fx_schema_parse(fx_strbuf_cstr(&sb), &again, &err), FX_OK);
        fx_strbuf sb2 = FX_STRBUF_INIT;
        fx_schema_format(&sb2, &again);
        assert_string_equal(fx_strbuf_cstr(&sb), fx_strbuf_cstr(&sb2));
        assert_int_equal(again.nargs, op->schema.nargs);
        assert_int_equal(again.nrets, op->schema.nrets);
        assert_int_equal(again.mutated_arg, op->schema.mutated_arg);
        assert_int_equal(again.view_arg, op->schema.view_arg);
        fx_schema_clear(&again);
        fx_strbuf_free(&sb);
        fx_strbuf_free(&sb2);
        /* the qualname is name.overload, and the name is the text before '(' / '.' */
        char name[96];
        size_t n = strcspn(op->schema_text, ".(");
        memcpy(name, op->schema_text, n);
        name[n] = 0;
        assert_string_equal(op->schema.name, name);
        if (op->schema_text[n] == '(') assert_string_equal(op->schema.overload, "default");
    }
}

static void test_flags_follow_alias_annotations(void **state) {
    (void)state;
    for (int i = 0; i < FX_OP_COUNT; i++) {
        const fx_opdef *op = fx_op_get((fx_op_id)i);
        const char *t = op->schema_text;
        const char *arrow = strstr(t, ") -> ");
        assert_non_null(arrow);
        bool writes = strstr(t, "!)") != NULL;
        /* a return annotated (x) without '!' that an argument also carries */
        bool aliases = false;
        for (const char *p = arrow; (p = strstr(p, "Tensor(")); p++) {
            char set = p[7];
            if (p[8] == '!') continue;
            char pat[16], pat2[16];
            snprintf(pat, sizeof pat, "Tensor(%c)", set);
            snprintf(pat2, sizeof pat2, "Tensor(%c -> *)", set); /* split, unbind, chunk */
            const char *q = strstr(t, pat), *q2 = strstr(t, pat2);
            if ((q && q < arrow) || (q2 && q2 < arrow)) aliases = true;
        }
        bool composite = op->flags & FX_OPF_COMPOSITE;
        if (fx_op_is_inplace(op) != writes) fail_msg("%s: inplace flag", op->qualname);
        if (fx_op_is_view(op) != (aliases && !composite)) fail_msg("%s: view flag", op->qualname);
        if (writes) {
            assert_true(op->schema.mutated_arg >= 0);
            assert_true(op->schema.args[op->schema.mutated_arg].alias_write);
            /* every in-place op names its functional twin, which is not in-place; set_ has none:
             * functionalization makes self an alias of the source (set__functionalize) */
            if (!strncmp(op->qualname, "set_", 4)) continue;
            const fx_opdef *tw = fx_op_get(op->twin);
            if (!tw) fail_msg("%s has no functional twin", op->qualname);
            assert_false(fx_op_is_inplace(tw));
        } else {
            assert_int_equal(op->schema.mutated_arg, -1);
        }
        /* a view kernel slot is empty: views compute nothing */
        if (fx_op_is_view(op)) assert_null(op->kernel);
    }
}

static void test_specific_schemas(void **state) {
    (void)state;
    fx_ops_install(); /* meta functions and kernels (core/ops_table.c; fx_ctx_init does it too) */
    const fx_opdef *add_ = fx_op_lookup("aten::add_.Tensor");
    assert_non_null(add_);
    assert_true(fx_op_is_inplace(add_));
    assert_false(fx_op_is_view(add_));
    assert_int_equal(add_->schema.mutated_arg, 0);
    assert_int_equal(add_->twin, FX_OP_ADD_TENSOR);
    assert_true(add_->schema.args[2].kwarg_only);
    assert_int_equal(add_->schema.args[2].type, FX_TY_SCALAR);
    assert_int_equal(add_->schema.args[2].def.tag, FX_IV_INT);
    assert_int_equal(add_->schema.args[2].def.u.i, 1);

    const fx_opdef *sel = fx_op_lookup("select.int");
    assert_true(fx_op_is_view(sel));
    assert_int_equal(sel->schema.view_arg, 0);
    assert_int_equal(sel->scatter, FX_OP_SELECT_SCATTER);

    const fx_opdef *sl = fx_op_lookup("aten.slice.Tensor");
    assert_true(fx_op_is_view(sl));
    assert_int_equal(sl->scatter, FX_OP_SLICE_SCATTER);
    assert_int_equal(sl->schema.nargs, 5);
    assert_int_equal(sl->schema.args[1].def.u.i, 0);     /* dim=0 */
    assert_true(sl->schema.args[2].optional);             /* SymInt? start=None */
    assert_int_equal(sl->schema.args[2].def.tag, FX_IV_NONE);
    assert_int_equal(sl->schema.args[4].def.u.i, 1);     /* step=1 */

    const fx_opdef *ip = fx_op_lookup("index_put_"); /* = index_put_.default */
    assert_non_null(ip);
    assert_ptr_equal(fx_op_lookup("aten::index_put_.default"), ip);
    assert_true(fx_op_is_inplace(ip));
    assert_int_equal(ip->twin, FX_OP_INDEX_PUT);
    assert_int_equal(ip->schema.args[1].type, FX_TY_TENSOR_LIST);
    assert_true(ip->schema.args[1].elem_optional);
    assert_false(ip->schema.args[1].optional);

    const fx_opdef *un = fx_op_lookup("unsqueeze");
    assert_int_equal(un->scatter, FX_OP_SQUEEZE_DIM);
    assert_int_equal(fx_op_get(FX_OP_SQUEEZE_DIM)->scatter, FX_OP_UNSQUEEZE);

    const fx_opdef *cont = fx_op_lookup("contiguous");
    assert_true(cont->flags & FX_OPF_COMPOSITE);
    assert_false(fx_op_is_view(cont));
    assert_int_equal(cont->schema.args[1].type, FX_TY_MEMFORMAT);
    assert_int_equal(cont->schema.args[1].def.tag, FX_IV_STR);
    assert_string_equal(cont->schema.args[1].def.u.s, "contiguous_format");

    const fx_opdef *sum = fx_op_lookup("sum.dim_IntList");
    assert_int_equal(sum->schema.args[1].type, FX_TY_INT_LIST);
    assert_int_equal(sum->schema.args[1].list_len, 1);
    assert_true(sum->schema.args[1].optional);
    assert_int_equal(fx_schema_arg_index(&sum->schema, "keepdim"), 2);
    assert_int_equal(fx_schema_arg_index(&sum->schema, "nope"), -1);

    const fx_opdef *bmm = fx_op_lookup("aten::bmm");
    assert_non_null(bmm);
    assert_int_equal(bmm->id, FX_OP_BMM);
    assert_non_null(bmm->meta);
    assert_non_null(bmm->kernel);
}

static void test_lookup_spellings(void **state) {
    (void)state;
    const fx_opdef *a = fx_op_get(FX_OP_ADD_TENSOR);
    assert_ptr_equal(fx_op_lookup("aten::add.Tensor"), a);
    assert_ptr_equal(fx_op_lookup("aten.add.Tensor"), a);
    assert_ptr_equal(fx_op_lookup("torch.ops.aten.add.Tensor"), a);
    assert_ptr_equal(fx_op_lookup("add.Tensor"), a);
    const fx_opdef *mm = fx_op_get(FX_OP_MM);
    assert_ptr_equal(fx_op_lookup("mm"), mm);
    assert_ptr_equal(fx_op_lookup("mm.default"), mm);
    assert_ptr_equal(fx_op_lookup("aten::mm"), mm);
    assert_ptr_equal(fx_op_lookup("aten.mm.default"), mm);
    assert_string_equal(mm->qualname, "mm.default");
    const char *q = fx_op_qualname(a);
    size_t n = strlen(q);
    assert_true(n >= 10 && !strcmp(q + n - 10, "add.Tensor"));
    assert_null(fx_op_lookup("add"));          /* no add.default */
    assert_null(fx_op_lookup("aten::nope"));
    assert_null(fx_op_lookup("mm.Tensor"));
    assert_null(fx_op_lookup(NULL));

    const fx_opdef *ov[8];
    int k = fx_op_overloads("squeeze", ov, 8);
    assert_int_equal(k, 3);
    for (int i = 0; i < k; i++) assert_string_equal(ov[i]->schema.name, "squeeze");
    assert_int_equal(fx_op_overloads("squeeze", ov, 2), 2);
    assert_int_equal(fx_op_overloads("nope", ov, 8), 0);
}

static void test_parse_errors_and_shapes(void **state) {
    (void)state;
    fx_err err;
    fx_schema s;
    static const char *const bad[] = {
        "foo(Tensor self",                 /* unclosed */
        "foo(Tensor self) Tensor",         /* no arrow */
        "foo(Tensor(a self) -> Tensor",    /* unclosed alias */
        "(Tensor self) -> Tensor",         /* no name */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fx_err_clear(&err);
        assert_int_not_equal(fx_schema_parse(bad[i], &s, &err), FX_OK);
        assert_int_equal(err.code, FX_EARG);
        assert_non_null(strstr(err.msg, "schema parse error"));
        fx_schema_clear(&s);
    }
    /* a tuple return with names, a Tensor(a)[] return, an int[2] default */
    fx_err_clear(&err);
    assert_int_equal(fx_schema_parse("max.dim(Tensor self, int dim, bool keepdim=False) -> "
                                     "(Tensor values, Tensor indices)",
                                     &s, &err),
                     FX_OK);
    assert_int_equal(s.nrets, 2);
    assert_string_equal(s.rets[1].name, "indices");
    fx_strbuf sb = FX_STRBUF_INIT;
    fx_schema_format(&sb, &s);
    assert_string_equal(fx_strbuf_cstr(&sb), "max.dim(Tensor self, int dim, bool keepdim=False) "
                                             "-> (Tensor values, Tensor indices)");
    fx_strbuf_free(&sb);
    fx_schema_clear(&s);
    assert_int_equal(fx_schema_parse("split.Tensor(Tensor(a -> *) self, SymInt split_size, int "
                                     "dim=0) -> Tensor(a)[]",
                                     &s, &err),
                     FX_OK);
    assert_int_equal(s.view_arg, 0);
    assert_int_equal(s.rets[0].type, FX_TY_TENSOR_LIST);
    fx_schema_clear(&s);
    assert_int_equal(fx_schema_parse("f(int[2] stride=[1], float eps=1e-05) -> Tensor", &s, &err),
                     FX_OK);
    assert_int_equal(s.args[0].list_len, 2);
    assert_int_equal(s.args[0].def.tag, FX_IV_LIST); /* [1] repeats to int[2]: [1, 1] */
    assert_int_equal(s.args[0].def.u.list.n, 2);
    assert_int_equal(s.args[0].def.u.list.items[1].u.i, 1);
    assert_int_equal(s.args[1].def.tag, FX_IV_FLOAT);
    assert_true(s.args[1].def.u.f == 1e-05);
    fx_schema_clear(&s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_schema_round_trips),
        cmocka_unit_test(test_flags_follow_alias_annotations),
        cmocka_unit_test(test_specific_schemas),
        cmocka_unit_test(test_lookup_spellings),
        cmocka_unit_test(test_parse_errors_and_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
