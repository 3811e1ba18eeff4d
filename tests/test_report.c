/* tests/test_report.c: the report writers on rows with hostile names (quotes, backticks,
 * system(...), <script>, newlines, bad UTF-8): gnuplot runs nothing, HTML/SVG stay inert, PNGs
 * are valid, the Markdown table keeps its shape, CSV records keep their field count. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "util/escape.h"
#include "report/report.h"
#include "testutil.h"
#include "util/util.h"

static char pwned[24], evil[250];

static void make_evil(void)
{
    snprintf(pwned, sizeof pwned, "/tmp/hpw%d", (int)getpid());
    snprintf(evil, sizeof evil,
             "x' system(\"touch %s-a\") `touch %s-b` '; system('touch %s-c'); print '\n"
             "set output '%s-d' @m <script>alert(1)</script> \"q\" & | \\ \xff\xfe end",
             pwned, pwned, pwned, pwned);
}

static int pwned_exists(void)
{
    char p[160];
    const char *sfx[] = {"-a", "-b", "-c", "-d"};
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s%s", pwned, sfx[i]);
        if (access(p, F_OK) == 0)
            return 1;
    }
    return 0;
}

static void fill_steps(baseline *b, int n, double shift)
{
    b->steps = calloc((size_t)n, sizeof *b->steps);
    b->n_steps = n;
    for (int i = 0; i < n; i++) {
        step_record *r = &b->steps[i];
        r->step = i + 1;
        r->loss = 5.0 * exp(-i / 20.0) + (i > n / 2 ? shift : 0);
        r->grad_norm = 1;
        r->tokens = 512;
        r->tokens_per_s = 1000 + i;
        r->step_ms = 512.0;
        r->mem_peak_bytes = 1 << 20;
        r->mem_total_bytes = 1 << 30;
    }
}

/* a judged row: run vs baseline with names that try everything */
static void make_row(report_row *row, judgement *j, int n, double shift)
{
    memset(j, 0, sizeof *j);
    j->run_id = 7;
    j->base_id = 3;
    snprintf(j->run.scenario, sizeof j->run.scenario, "%s", evil);
    snprintf(j->run.device, sizeof j->run.device, "dev`id`'\"<b>");
    snprintf(j->run.device_name, sizeof j->run.device_name, "%s", evil);
    snprintf(j->run.status, sizeof j->run.status, "ok");
    j->run.scenario_json = strdup("{\"model\": {\"family\": \"gpt2<script>\", \"overrides\": "
                                  "{\"a|b\": \"</td><script>x</script>\"}}, \"world_size\": 1}");
    j->base = j->run;
    j->base.scenario_json = NULL;
    snprintf(j->base.label, sizeof j->base.label, "%s", evil);
    fill_steps(&j->run, n, shift);
    fill_steps(&j->base, n, 0);
    compare_defaults("fp32", &j->cfg);
    series run = {j->run.steps, n, "ok"}, base = {j->base.steps, n, "ok"};
    compare_runs(&run, &base, &j->cfg, &j->res);
    snprintf(j->run_at.host, sizeof j->run_at.host, "hostA");
    j->run_at.threads = 4;
    j->run_at.load_avg = 1.5;
    snprintf(j->base_at.host, sizeof j->base_at.host, "hostB");
    j->base_at.threads = 16;
    j->base_at.load_avg = NAN;
    j->base_at.imported = 1;
    j->same_host = 0;
    memset(row, 0, sizeof *row);
    report_fill_row(row, j);
}

static int count_unescaped_pipes(const char *line)
{
    int n = 0;
    for (const char *p = line; *p; p++) {
        if (*p == '\\' && p[1]) {
            p++;
            continue;
        }
        n += *p == '|';
    }
    return n;
}

static void check_markdown(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[8192];
    int rows = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] != '|')
            continue;
        assert_int_equal(count_unescaped_pipes(line), 14); /* 13 columns */
        rows++;
    }
    fclose(f);
    assert_int_equal(rows, 2 + 3); /* header, rule, three rows */
}

/* RFC 4180 records: every record has the header's field count */
static void check_csv(const char *path)
{
    size_t len;
    char *t = read_file(path, &len);
    assert_non_null(t);
    int fields = 1, records = 0, want = -1, quoted = 0;
    for (size_t i = 0; i < len; i++) {
        char c = t[i];
        if (quoted) {
            if (c == '"' && t[i + 1] == '"')
                i++;
            else if (c == '"')
                quoted = 0;
        } else if (c == '"') {
            quoted = 1;
        } else if (c == ',') {
            fields++;
        } else if (c == '\n') {
            if (want < 0)
                want = fields;
            assert_int_equal(fields, want);
            records++;
            fields = 1;
        }
    }
    assert_int_equal(want, 36); /* columns, forced the last */
    assert_int_equal(records, 4);
    free(t);
}

static uint32_t crc32_of(const unsigned char *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0xedb88320u : c >> 1;
    }
    return c ^ 0xffffffffu;
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* signature, IHDR first, IEND last, every chunk's CRC right */
static void check_png(const char *path)
{
    size_t len;
    unsigned char *d = (unsigned char *)read_file(path, &len);
    assert_non_null(d);
    assert_true(len > 8 && memcmp(d, "\x89PNG\r\n\x1a\n", 8) == 0);
    size_t off = 8;
    int chunks = 0;
    char last[5] = "";
    while (off + 12 <= len) {
        uint32_t n = be32(d + off);
        assert_true(off + 12 + n <= len);
        memcpy(last, d + off + 4, 4);
        if (chunks++ == 0)
            assert_memory_equal(last, "IHDR", 4);
        assert_int_equal(crc32_of(d + off + 4, n + 4), be32(d + off + 8 + n));
        off += 12 + n;
    }
    assert_int_equal(off, len);
    assert_string_equal(last, "IEND");
    free(d);
}

static void check_inert(const char *path)
{
    char *t = read_file(path, NULL);
    assert_non_null(t);
    if (strstr(t, "<script") || strstr(t, "<SCRIPT"))
        fail_msg("%s contains a raw <script", path);
    free(t);
}

static void check_svg(const char *path)
{
    char *t = read_file(path, NULL);
    assert_non_null(t);
    assert_non_null(strstr(t, "<svg"));
    assert_non_null(strstr(t, "</svg>"));
    free(t);
    check_inert(path);
}

static const char *out_path(const char *dir, const char *name)
{
    static char buf[4][600];
    static int k;
    char *p = buf[k++ % 4];
    snprintf(p, 600, "%s/%s", dir, name);
    return p;
}

static void test_report_hostile_names(void **state)
{
    make_evil();
    char dir[256];
    snprintf(dir, sizeof dir, "/tmp/harness-report-%d", (int)getpid());
    mkdir(dir, 0777);
    report r = {calloc(3, sizeof(report_row)), 3, dir, 0, "2024-01-01T00:00:00Z"};
    plotter *p;
    assert_int_equal(report_plot_begin(dir, &p), 0);
    judgement j;
    for (int i = 0; i < 3; i++) {
        make_row(&r.rows[i], &j, i == 2 ? 5000 : 60, i == 1 ? 0.5 : 0);
        if (i == 2) /* no baseline */
            r.rows[i].has_baseline = 0;
        assert_int_equal(report_plot_row(p, &r.rows[i], i + 1, &j), 0);
        judge_free(&j);
    }
    snprintf(r.rows[2].note, sizeof r.rows[2].note, "%s", evil);
    assert_int_equal(report_plot_end(p, &r), 0);
    assert_true(r.plots);
    assert_int_equal(r.rows[1].res.v, VERDICT_FAIL);
    assert_int_equal(report_worst(&r), VERDICT_FAIL);
    assert_int_equal(report_markdown(&r, out_path(dir, "report.md")), 0);
    assert_int_equal(report_csv(&r, out_path(dir, "report.csv")), 0);
    assert_int_equal(report_junit(&r, out_path(dir, "junit.xml")), 0);
    assert_int_equal(report_html(&r, out_path(dir, "report.html")), 0);
    assert_false(pwned_exists());
    check_markdown(out_path(dir, "report.md"));
    check_csv(out_path(dir, "report.csv"));
    check_inert(out_path(dir, "report.html"));
    check_inert(out_path(dir, "junit.xml"));
    const char *plots[] = {"loss_1", "dloss_1", "loss_2", "dloss_2", "loss_3", "throughput",
                           "memory"};
    char name[64];
    for (size_t i = 0; i < sizeof plots / sizeof plots[0]; i++) {
        snprintf(name, sizeof name, "plots/%s.png", plots[i]);
        check_png(out_path(dir, name));
        snprintf(name, sizeof name, "plots/%s.svg", plots[i]);
        check_svg(out_path(dir, name));
    }
    /* the HTML inlines the PNGs */
    char *html = read_file(out_path(dir, "report.html"), NULL);
    assert_non_null(strstr(html, "src=\"data:image/png;base64,iVBORw0KGgo"));
    assert_non_null(strstr(html, "Content-Security-Policy"));
    assert_non_null(strstr(html, "&lt;script&gt;"));
    /* the page is reports/template.html around the body; run ids in the table */
    assert_null(strstr(html, "@BODY@"));
    assert_non_null(strstr(html, "<title>Porting report</title>"));
    assert_true(strlen(html) > 8 && strcmp(html + strlen(html) - 8, "</html>\n") == 0);
    assert_non_null(strstr(html, "<tr><td class=\"n\">7</td>"));
    assert_non_null(strstr(html, "(run 3; not gated; other host)"));
    assert_non_null(strstr(html, "run: hostA, 4 threads, load 1.50; baseline: hostB, 16 "
                                 "threads, imported; different hosts"));
    free(html);
    char *md = read_file(out_path(dir, "report.md"), NULL);
    assert_non_null(md);
    assert_non_null(strstr(md, "\n| 7 | "));
    assert_non_null(strstr(md, "(run 3; not gated; other host) |"));
    assert_non_null(strstr(md, "informational unless the scenario sets"));
    free(md);
    char *junit = read_file(out_path(dir, "junit.xml"), NULL);
    assert_non_null(junit);
    assert_non_null(strstr(junit, "<property name=\"run\" value=\"7\"/>"));
    assert_non_null(strstr(junit, "<property name=\"baseline_run\" value=\"3\"/>"));
    assert_non_null(strstr(junit, "<property name=\"same_host\" value=\"false\"/>"));
    free(junit);
    char *csv = read_file(out_path(dir, "report.csv"), NULL);
    assert_non_null(csv);
    assert_non_null(strstr(csv, ",hostA,4,hostB,16,0,0,0,,,,,0\r\n"));
    free(csv);
    /* every plot script starts with the shared style of reports/style.gp */
    char *gp = read_file(out_path(dir, "plots/plots_0.gp"), NULL);
    assert_non_null(gp);
    assert_non_null(strstr(gp, "set style line 2 lc rgb '#88aaff' lw 3\n"));
    assert_non_null(strstr(gp, "with lines ls 2"));
    free(gp);
    free(r.rows);
    assert_int_equal(tu_remove_tree(dir), 0); /* no leftovers */
}

static void test_escapes(void **state)
{
    char *buf;
    size_t len;
    FILE *f = open_memstream(&buf, &len);
    esc_gnuplot(f, "a'b\nc`d`");
    fputc('|', f);
    esc_html(f, "<a href='x'>&\"\x01\xc3\xa9\xff");
    fputc('|', f);
    esc_csv(f, "=1+2,\"x\"");
    fputc('|', f);
    esc_markdown(f, "-a|b*c\n<");
    fclose(f);
    assert_string_equal(buf, "'a''b c`d`'|&lt;a href=&#39;x&#39;&gt;&amp;&quot;\xef\xbf\xbd"
                             "\xc3\xa9\xef\xbf\xbd|\"'=1+2,\"\"x\"\"\"|\\-a\\|b\\*c &lt;");
    free(buf);
    /* C1 controls (U+0085 NEL, U+009B CSI) are control characters too; U+00A0 is not */
    f = open_memstream(&buf, &len);
    esc_html(f, "a\xc2\x85" "b\xc2\xa0");
    fputc('|', f);
    esc_csv(f, "c\xc2\x9b" "d");
    fputc('|', f);
    esc_gnuplot(f, "e\xc2\x85" "f");
    fclose(f);
    assert_string_equal(buf, "a\xef\xbf\xbd" "b\xc2\xa0|c\xef\xbf\xbd" "d|'e f'");
    free(buf);
    char name[16];
    esc_filename("../a b/c", name, sizeof name);
    assert_string_equal(name, "_._a_b_c");
    esc_filename("", name, sizeof name);
    assert_string_equal(name, "_");
    esc_filename("averyveryverylongname", name, 8);
    assert_string_equal(name, "averyve");
}

static void test_scenario_fields(void **state)
{
    report_row row;
    memset(&row, 0, sizeof row);
    report_scenario_fields("{\"model\": {\"family\": \"gpt2\", \"config\": {\"n_layer\": 2, "
                           "\"n_embd\": 64, \"n_head\": 4}, \"overrides\": {\"attn_pdrop\": 0.0}},"
                           " \"train\": {\"batch_size\": 8}, \"world_size\": 2}", &row);
    assert_string_equal(row.model, "gpt2, 2 layers, 64 wide, 4 heads");
    assert_string_equal(row.overrides, "attn_pdrop=0.0");
    assert_int_equal(row.batch_size, 8);
    assert_int_equal(row.ranks, 2);
    report_scenario_fields("not json", &row);
    assert_string_equal(row.model, "?");
    char b[32];
    format_bytes(11.3 * 1048576, b, sizeof b);
    assert_string_equal(b, "11.3 MiB");
    format_bytes(NAN, b, sizeof b);
    assert_string_equal(b, "-");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_scenario_fields),
        cmocka_unit_test(test_report_hostile_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
