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
  it('refuses keys that cannot be made valid', () => {
    assert.equal(annotationKey('step', '-'), undefined);
  });
  it('truncates to 63 characters', () => {
    assert.equal(annotationKey('step', 'k'.repeat(100))!.length, 63);
  });
});
