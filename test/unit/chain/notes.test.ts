import assert from 'node:assert/strict';
import { ReviewNotes, annotationKey } from '../../../server/dispatch/notes.js';

describe('ReviewNotes', () => {
  describe('warnings', () => {
    it('prefixes the step, removes control characters and de-duplicates', () => {
      const notes = new ReviewNotes();
      notes.warn('image-policy', 'tag latest\nis not pinned');
      notes.warn('image-policy', 'tag latest\nis not pinned');
      notes.warn('pod-security', '  privileged\u0007 container ');
      notes.warn('pod-security', '\u0000');
      assert.deepEqual(notes.warnings(), [
        'image-policy: tag latest is not pinned',
        'pod-security: privileged container',
      ]);
    });

    it('folds runs of spaces and trims, control characters or not', () => {
      const notes = new ReviewNotes();
      notes.warn('s', ' two  spaces ');
      notes.warn('t', 'as written');
      assert.deepEqual(notes.warnings(), ['s: two spaces', 't: as written']);
    });

    it('counts the total in runes: two warnings of 1,100 astral characters (4,400 UTF-16 units) are within it', () => {
      const notes = new ReviewNotes();
      notes.warn('s', '😀'.repeat(1100));
      notes.warn('t', '😀'.repeat(1100));
      const warnings = notes.warnings()!;
      assert.deepEqual(
        warnings.map((w) => w.length),
        [2203, 2203],
      );
    });

    it('is undefined when there are none', () => {
      assert.equal(new ReviewNotes().warnings(), undefined);
    });

    it('cuts each warning to 256 characters once the total passes 4096, and bounds the total', () => {
      const notes = new ReviewNotes();
      for (let i = 0; i < 40; i++) notes.warn('s', `${i} ${'x'.repeat(300)}`);
      const warnings = notes.warnings()!;
      assert.ok(warnings.every((w) => w.length === 256));
      assert.equal(warnings.length, 16);
      assert.ok(warnings[0]!.startsWith('s: 0 xxx'));
    });

    it('keeps everything under 4096 characters in total', () => {
      const notes = new ReviewNotes();
      notes.warn('s', 'y'.repeat(1000));
      notes.warn('t', 'z'.repeat(1000));
      assert.deepEqual(notes.warnings(), [`s: ${'y'.repeat(1000)}`, `t: ${'z'.repeat(1000)}`]);
    });
  });

  describe('audit annotations', () => {
    it('qualifies keys with the step name', () => {
      const notes = new ReviewNotes();
      notes.annotate('default-labels', 'added', '2');
      notes.annotate('image-policy', 'rewritten images', '1');
      assert.deepEqual(notes.annotations(), { 'default-labels.added': '2', 'image-policy.rewritten-images': '1' });
    });
  });
});

describe('annotationKey()', () => {
  it('replaces characters a qualified name cannot hold, including /', () => {
    assert.equal(annotationKey('step', 'a/b c'), 'step.a-b-c');
  });
  it('refuses keys that cannot be made valid, every time it is asked', () => {
    assert.equal(annotationKey('step', '-'), undefined);
    assert.equal(annotationKey('step', '-'), undefined);
  });
  it('gives the same key when asked again, long keys included', () => {
    for (let i = 0; i < 2; i++) {
      assert.equal(annotationKey('step', 'failed open'), 'step.failed-open');
      assert.equal(annotationKey('step', `${'k'.repeat(200)}/x`), `step.${'k'.repeat(58)}`);
    }
  });
  it('truncates to 63 characters', () => {
    assert.equal(annotationKey('step', 'k'.repeat(100))!.length, 63);
  });
});
