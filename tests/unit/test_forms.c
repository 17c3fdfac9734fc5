// SPDX-License-Identifier: MIT
/*
 * Decoded forms (dlc_config.forms): a batch must not depend on which
 * form served each sample, nor on what the cache held. Every batch of
 * several epochs, train and eval, from files and from a pack, with forms
 * on at cache sizes that hold none, some or all of the forms, must equal
 * the batch of a loader with forms off, the exact transform and no cache
 * (whose pixels test_torchvision holds to torchvision, and the forms'
 * too). A truncated JPEG fails as it does without forms, and only it.
 * Also: dlc_decoder_sample_rgb() against dlc_decoder_sample() with
 * F_EXACT, its bad arguments, and the config's checks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "dlcache.h"
#include "forms.h"
#include "internal.h"
#include "helpers/loadercmp.h"
#include "helpers/testutil.h"

#define SIDE	48
#define B	8
#define EPOCHS	3

static char *tmp;
static char root[1024], packpath[1100];
static struct dlc_index *g_src, *g_pack;
static uint32_t g_n;

/* 3 classes, a gray JPEG, a truncated one, and the set's pack. */
static int setup(void)
{

	tmp = t_mkdtemp(NULL);
	if (!tmp || strlen(tmp) > 900)
		return -1;
	snprintf(root, sizeof(root), "%s/set", tmp);
	if (t_make_mixed_set(root, 8))
		return -1;
	if (dlc_index_build(root, &g_src))
		return -1;
	g_n = dlc_index_count(g_src);
	snprintf(packpath, sizeof(packpath), "%s/set.dlp", tmp);
	if (t_pack_tree(g_src, root, packpath))
		return -1;
	return dlc_index_load(packpath, &g_pack);
}

static void config(struct dlc_config *cfg, uint32_t forms, uint64_t cache,
		   int eval)
{
	dlc_config_init(cfg);
	if (eval)
		dlc_transform_default(&cfg->transform, DLC_TRANSFORM_EVAL);
	cfg->batch_size = B;
	cfg->transform.out_w = SIDE;
	cfg->transform.out_h = SIDE;
	if (eval)
		cfg->transform.resize = SIDE * 256 / 224;
	else
		cfg->shuffle = 1;
	/* the reference asks for the exact pixels; forms set it themselves */
	if (!forms)
		cfg->transform.flags |= DLC_TRANSFORM_F_EXACT;
	cfg->forms = forms;
	cfg->seed = 7;
	cfg->window = 24;
	cfg->queue_depth = 8;
	cfg->nbatches = 3;
	cfg->decode_threads = 2;
	cfg->cache_bytes = cache;
	cfg->backend = DLC_BACKEND_INPROCESS;
	cfg->on_error = DLC_ON_ERROR_SKIP;
	cfg->log = t_log_capture;
}

/* The forms' bytes of the whole set: every image, 3 bytes a pixel. */
static uint64_t forms_bytes(void)
{
	struct dlc_decoder *d = NULL;
	struct dlc_jpeg_info info;
	uint64_t sum = 0;
	char path[8192];
	uint32_t i;
	uint8_t *j;
	size_t len;

	if (dlc_decoder_create(0, &d))
		return 0;
	for (i = 0; i < g_n; i++) {
		snprintf(path, sizeof(path), "%s/%s", root,
			 dlc_index_relpath(g_src, i));
		j = t_read_file(path, &len);
		if (j && !dlc_decoder_header(d, j, len, &info))
			sum += (uint64_t)info.width * info.height * 3;
		free(j);
	}
	dlc_decoder_destroy(d);
	return sum;
}

/*
 * Every batch of EPOCHS epochs of @idx with forms in @mode and @cache
 * bytes against the reference loader's (forms off, exact, no cache):
 * the same ids, labels, pixels and errors. *@st: the forms loader's stats.
 */
static void same_batches(const char *what, const struct dlc_index *idx,
			 uint32_t mode, uint64_t cache, int eval,
			 struct dlc_stats *st)
{
	struct dlc_loader *a = NULL, *b = NULL;
	struct dlc_stats sa;
	struct dlc_config cfg;
	uint32_t e, left;

	memset(st, 0, sizeof(*st));
	config(&cfg, 0, 0, eval);
	CHECK(dlc_loader_create(&cfg, idx, &a) == 0, "%s: reference", what);
	config(&cfg, mode, cache, eval);
	CHECK(dlc_loader_create(&cfg, idx, &b) == 0, "%s: forms", what);
	if (!a || !b)
		goto out;
	/*
	 * auto makes no form before it has measured the loader for a quarter of a
	 * second: EPOCHS epochs once it has (about 5 s at most before)
	 */
	for (e = 0, left = EPOCHS; left; e++) {
		t_same_epoch(a, b, e, (size_t)3 * SIDE * SIDE, what);
		CHECK_EQ(dlc_loader_stats(b, st, sizeof(*st)), 0);
		if (mode != DLC_FORMS_AUTO || !cache || st->forms_regime ||
		    e >= 2000)
			left--;
	}
	CHECK(mode != DLC_FORMS_AUTO || !cache || st->forms_regime,
	      "%s: no regime chosen after %u epochs", what, e);
	CHECK_EQ(dlc_loader_stats(a, &sa, sizeof(sa)), 0);
	/* the truncated file, once an epoch, and nothing else */
	CHECK(sa.errors == e && st->errors == e && st->skipped == e,
	      "%s: errors %llu (reference %llu), skipped %llu, want %u",
	      what, (unsigned long long)st->errors,
	      (unsigned long long)sa.errors,
	      (unsigned long long)st->skipped, e);
	CHECK(st->forms_bytes <= st->cache_used &&
	      st->cache_used <= st->cache_capacity,
	      "%s: forms hold %llu bytes of %llu used, capacity %llu", what,
	      (unsigned long long)st->forms_bytes,
	      (unsigned long long)st->cache_used,
	      (unsigned long long)st->cache_capacity);
	/* a hit counts the storage bytes it saves: a form's encoded ones */
	CHECK(st->hit_bytes <= e * dlc_index_total_bytes(idx),
	      "%s: %llu bytes of hits in %u epochs of %llu encoded bytes",
	      what, (unsigned long long)st->hit_bytes, e,
	      (unsigned long long)dlc_index_total_bytes(idx));
	printf("%s: %llu of %u samples from forms, %llu made, %llu not kept, %llu held (%llu bytes)\n",
	       what, (unsigned long long)st->form_hits, g_n * e,
	       (unsigned long long)st->forms_made,
	       (unsigned long long)st->forms_refused,
	       (unsigned long long)st->forms_held,
	       (unsigned long long)st->forms_bytes);
out:
	dlc_loader_destroy(a);
	dlc_loader_destroy(b);
}

static void check_set(const char *name, const struct dlc_index *idx)
{
	uint64_t all = forms_bytes() * 2, enc = dlc_index_total_bytes(idx);
	struct dlc_stats st;
	char what[128];

	/* all of them: every sample after the first epoch from a form */
	snprintf(what, sizeof(what), "%s, train, decoded, all forms", name);
	same_batches(what, idx, DLC_FORMS_DECODED, all, 0, &st);
	CHECK(st.form_hits == (uint64_t)(g_n - 1) * (EPOCHS - 1),
	      "%s: %llu samples from forms, want %u", what,
	      (unsigned long long)st.form_hits, (g_n - 1) * (EPOCHS - 1));
	CHECK(st.forms_held == g_n - 1 && st.forms_regime == 1,
	      "%s: %llu forms held (want %u), regime %llu", what,
	      (unsigned long long)st.forms_held, g_n - 1,
	      (unsigned long long)st.forms_regime);
	/* some: forms and encoded bytes side by side */
	snprintf(what, sizeof(what), "%s, train, decoded, a quarter", name);
	same_batches(what, idx, DLC_FORMS_DECODED, all / 8, 0, &st);
	CHECK(st.form_hits > 0 && st.forms_held < g_n - 1,
	      "%s: %llu from forms, %llu held", what,
	      (unsigned long long)st.form_hits,
	      (unsigned long long)st.forms_held);
	/* too small for any form: encoded bytes only */
	snprintf(what, sizeof(what), "%s, train, auto, half the encoded", name);
	same_batches(what, idx, DLC_FORMS_AUTO, enc / 2, 0, &st);
	snprintf(what, sizeof(what), "%s, train, auto, no cache", name);
	same_batches(what, idx, DLC_FORMS_AUTO, 0, 0, &st);
	CHECK(st.form_hits == 0 && st.forms_regime == 0,
	      "%s: no cache, yet %llu from forms, regime %llu", what,
	      (unsigned long long)st.form_hits,
	      (unsigned long long)st.forms_regime);
	snprintf(what, sizeof(what), "%s, eval, auto, all forms", name);
	same_batches(what, idx, DLC_FORMS_AUTO, all, 1, &st);
	CHECK(st.form_hits > 0, "%s: none from forms", what);
}

static void test_files(void)
{
	check_set("files", g_src);
}

static void test_pack(void)
{
	check_set("pack", g_pack);
}

/* The public entry: F_EXACT's pixels from the image decoded whole. */
static void test_sample_rgb(void)
{
	struct dlc_decoder *d = NULL;
	struct dlc_transform t;
	struct dlc_crop ca, cb;
	uint8_t *px = malloc(3 * SIDE * SIDE), *ref = malloc(3 * SIDE * SIDE);
	uint8_t *rgb = NULL, *j;
	char path[8192];
	uint32_t i, e, k, w, h, same = 0, tried = 0;
	size_t len;

	CHECK_EQ(dlc_decoder_create(0, &d), 0);
	if (!d || !px || !ref)
		exit(1);
	for (i = 0; i < g_n; i++) {
		snprintf(path, sizeof(path), "%s/%s", root,
			 dlc_index_relpath(g_src, i));
		j = t_read_file(path, &len);
		if (!j || dlc_decoder_full(d, j, len, &rgb, &w, &h)) {
			free(j);
			continue;	/* the truncated one */
		}
		for (k = 0; k < 2; k++) {
			dlc_transform_default(&t, k ? DLC_TRANSFORM_EVAL :
					      DLC_TRANSFORM_TRAIN);
			t.out_w = t.out_h = SIDE;
			t.flags = DLC_TRANSFORM_F_EXACT;
			for (e = 0; e < 4; e++) {
				CHECK_EQ(dlc_decoder_sample(d, j, len, &t, 3, e, i,
							    DLC_LAYOUT_NHWC,
							    ref, &ca), 0);
				/* the flag is implied */
				t.flags = 0;
				CHECK_EQ(dlc_decoder_sample_rgb(d, rgb, w, h, &t,
								3, e, i,
								DLC_LAYOUT_NHWC,
								px, &cb), 0);
				t.flags = DLC_TRANSFORM_F_EXACT;
				tried++;
				same += !memcmp(px, ref, 3 * SIDE * SIDE) &&
					!memcmp(&ca, &cb, sizeof(ca));
			}
		}
		free(rgb);
		free(j);
	}
	CHECK(tried > 100 && same == tried,
	      "%u of %u samples from the whole image equal F_EXACT's", same,
	      tried);
	dlc_transform_default(&t, DLC_TRANSFORM_TRAIN);
	t.out_w = t.out_h = SIDE;
	CHECK_EQ(dlc_decoder_sample_rgb(d, NULL, 10, 10, &t, 0, 0, 0, 0, px,
					NULL), -EINVAL);
	CHECK_EQ(dlc_decoder_sample_rgb(d, px, 0, 10, &t, 0, 0, 0, 0, px,
					NULL), -EINVAL);
	CHECK_EQ(dlc_decoder_sample_rgb(d, px, 10, 10, NULL, 0, 0, 0, 0, px,
					NULL), -EINVAL);
	CHECK_EQ(dlc_decoder_sample_rgb(d, px, 10, 10, &t, 0, 0, 0, 7, px,
					NULL), -EINVAL);
	/* over the decoder's pixel cap: never trusted as an image's size */
	CHECK_EQ(dlc_decoder_sample_rgb(d, px, 1u << 20, 1u << 20, &t, 0, 0, 0,
					0, px, NULL), -EINVAL);
	CHECK(strstr(dlc_decoder_error(d), "invalid argument"), "said: %s",
	      dlc_decoder_error(d));
	dlc_decoder_destroy(d);
	free(px);
	free(ref);
}

static void test_config(void)
{
	struct dlc_loader *l = NULL;
	struct dlc_config cfg;

	config(&cfg, 3, 1 << 20, 0);
	t_log_clear();
	CHECK_EQ(dlc_loader_create(&cfg, g_src, &l), -EINVAL);
	CHECK(strstr(t_logbuf, "forms: must be DLC_FORMS_OFF, _AUTO or _DECODED, got 3"),
	      "logged: %s", t_logbuf);
	config(&cfg, DLC_FORMS_AUTO, 1 << 20, 0);
	cfg.pad3 = 1;
	CHECK_EQ(dlc_loader_create(&cfg, g_src, &l), -EINVAL);
	CHECK(!strcmp(dlc_forms_name(DLC_FORMS_AUTO), "auto") &&
	      !strcmp(dlc_forms_name(9), "?"), "names");
}

/*
 * In-process, no form is made in the job's last known epoch (cfg.epochs):
 * it would serve no later one. Epochs 2: the first makes them and the
 * second uses them, making none; epochs 1: none at all. The batches are
 * the reference's either way.
 */
static void test_last_epoch(void)
{
	struct dlc_loader *a = NULL, *b = NULL;
	struct dlc_stats st;
	struct dlc_config cfg;
	uint64_t made0;
	uint32_t epochs;

	for (epochs = 1; epochs <= 2; epochs++) {
		config(&cfg, 0, 0, 0);
		CHECK_EQ(dlc_loader_create(&cfg, g_src, &a), 0);
		config(&cfg, DLC_FORMS_DECODED, forms_bytes() * 2, 0);
		cfg.epochs = epochs;
		CHECK_EQ(dlc_loader_create(&cfg, g_src, &b), 0);
		if (!a || !b)
			goto next;
		t_same_epoch(a, b, 0, (size_t)3 * SIDE * SIDE, "last epoch");
		CHECK_EQ(dlc_loader_stats(b, &st, sizeof(st)), 0);
		made0 = st.forms_made;
		if (epochs == 1) {
			CHECK(made0 == 0, "epochs 1: %llu forms made",
			      (unsigned long long)made0);
			goto next;
		}
		CHECK(made0 > 0, "epochs 2: no form made in epoch 0");
		t_same_epoch(a, b, 1, (size_t)3 * SIDE * SIDE, "last epoch");
		CHECK_EQ(dlc_loader_stats(b, &st, sizeof(st)), 0);
		CHECK(st.forms_made == made0 && st.form_hits > 0,
		      "epochs 2: %llu made in the last epoch, %llu hits",
		      (unsigned long long)(st.forms_made - made0),
		      (unsigned long long)st.form_hits);
next:
		dlc_loader_destroy(a);
		dlc_loader_destroy(b);
		a = b = NULL;
	}
}

/*
 * A form's trailer (forms.h), as it leaves for dlcache.ko and comes back:
 * what the module returns is believed only when its shape adds up.
 */
static void test_trailer(void)
{
	const uint32_t w = 5, h = 3, px = w * h * 3;
	struct dlc_buf *b = dlc_buf_alloc(px + DLC_FORM_TRAILER);
	struct dlc_buf *c = dlc_buf_alloc(px + DLC_FORM_TRAILER);
	uint32_t i;

	if (!b || !c) {
		CHECK(0, "no memory");
		return;
	}
	for (i = 0; i < px; i++)
		b->data[i] = (uint8_t)(i * 7);
	b->len = px;
	b->form_w = w;
	b->form_h = h;
	dlc_form_seal(b);
	/* Little-endian, whatever the host: magic "DLMF", then w and h. */
	CHECK(!memcmp(b->data + px, "DLMF", 4) && b->data[px + 4] == w &&
	      b->data[px + 8] == h, "trailer bytes");
	memcpy(c->data, b->data, px + DLC_FORM_TRAILER);
	CHECK_EQ(dlc_form_unseal(c, px + DLC_FORM_TRAILER, 1000), 0);
	CHECK(c->form_w == w && c->form_h == h && c->len == px &&
	      !memcmp(c->data, b->data, px), "unsealed shape and pixels");
	/* Each lie about the shape is refused, nothing set. */
	c->len = px + DLC_FORM_TRAILER;
	c->form_w = c->form_h = 0;
	CHECK_EQ(dlc_form_unseal(c, px + DLC_FORM_TRAILER, w * h - 1), -EBADMSG);
	CHECK_EQ(dlc_form_unseal(c, px + DLC_FORM_TRAILER + 1, 1000), -EBADMSG);
	CHECK_EQ(dlc_form_unseal(c, px + DLC_FORM_TRAILER - 3, 1000), -EBADMSG);
	CHECK_EQ(dlc_form_unseal(c, DLC_FORM_TRAILER - 1, 1000), -EBADMSG);
	c->data[px] ^= 1;
	CHECK_EQ(dlc_form_unseal(c, px + DLC_FORM_TRAILER, 1000), -EBADMSG);
	c->data[px] ^= 1;
	c->data[px + 12] = 1;
	CHECK_EQ(dlc_form_unseal(c, px + DLC_FORM_TRAILER, 1000), -EBADMSG);
	c->data[px + 12] = 0;
	c->data[px + 4] = 0;
	CHECK_EQ(dlc_form_unseal(c, px + DLC_FORM_TRAILER, 1000), -EBADMSG);
	CHECK(c->form_w == 0 && c->len == px + DLC_FORM_TRAILER,
	      "a refused form left unchanged");
	dlc_buf_put(b);
	dlc_buf_put(c);
}

/*
 * form_saved_ns counts a hit's saving against the decode it replaces: a
 * sample's crop-first decode, not the whole decode that made its form
 * (which costs more), unless nothing else was measured.
 */
static void test_saved(void)
{
	struct dlc_forms f;
	const uint64_t ms = 1000000;

	if (dlc_forms_init(&f, DLC_FORMS_DECODED, 4, 4, 1 << 20)) {
		CHECK(0, "init");
		return;
	}
	dlc_forms_note_whole(&f, 0, 10 * ms);
	dlc_forms_note_hit(&f, 0, 1 * ms);
	CHECK_EQ(f.saved_ns, 9 * ms);	/* nothing else known: the whole decode */
	dlc_forms_note_decode(&f, 1, 4 * ms);
	dlc_forms_note_hit(&f, 0, 1 * ms);
	CHECK_EQ(f.saved_ns, 12 * ms);	/* the mean crop-first decode, 4 ms */
	dlc_forms_note_decode(&f, 0, 6 * ms);
	dlc_forms_note_whole(&f, 0, 10 * ms);	/* its own stays */
	dlc_forms_note_hit(&f, 0, 1 * ms);
	CHECK_EQ(f.saved_ns, 17 * ms);
	dlc_forms_note_hit(&f, 2, 1 * ms);	/* never decoded: nothing */
	CHECK_EQ(f.saved_ns, 17 * ms);
	CHECK_EQ(f.hits, 4);
	dlc_forms_fini(&f);
}

int main(void)
{
	if (setup()) {
		fprintf(stderr, "test_forms: setup failed\n");
		return 1;
	}
	test_sample_rgb();
	t_report("sample_rgb");
	test_trailer();
	t_report("trailer");
	test_saved();
	t_report("saved");
	test_config();
	t_report("config");
	test_last_epoch();
	t_report("last_epoch");
	test_files();
	t_report("files");
	test_pack();
	t_report("pack");
	dlc_index_free(g_src);
	dlc_index_free(g_pack);
	t_rmtree(tmp);
	free(tmp);
	return t_done("test_forms");
}
