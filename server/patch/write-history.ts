/**
 * The writes that stayed in a review's working copy, in the order they were made: one tracked session per
 * step invocation on it (and the gateway's own writes). Each session keeps its undo log, so the object as
 * it stood before any of them can be told from the object at the end; each step's own patch (from the object
 * as it found it to the object as it left it, values as it left them) is worked out only when a trace asks for
 * it (decision-trace.ts, or explain/kept-trace.ts keeping one), not while the steps run, which only add each
 * session to the list.
 *
 * Working back from the end, the sessions' undo logs are replayed onto shallow copies of the containers they
 * wrote to (TrackedSession.unapplyTo), never onto the object; what a patch compares is read through those
 * copies along the paths the step wrote, and copied whole only below the places it wrote and at an array on the
 * way (diff-written.ts compares one whole when its length changed). Each session costs its own writes and what
 * it compares, as the review's own diff does: linear in the object, whatever the number of writes.
 */
import type { JsonPatchOperation } from '../admission/types.js';
import { diffWritten } from './diff-written.js';
import { inOnePlaceOf, inWriteOrder, splitByWriter } from './split-patch.js';
import type { TrackedSession } from './tracked-object.js';
import { setMember } from './working-copy.js';
import { WrittenPaths, type ContainerPlace, type WrittenNode } from './written-paths.js';

/** The review's own account of its writes, given when no step overwrote another's (see finish). */
export interface ReviewWrites {
  /** The review's patch. */
  readonly patch: readonly JsonPatchOperation[];
  /** Who wrote what (the phase's WrittenPaths tree). */
  readonly written: WrittenNode;
}

type Container = Record<string, unknown> | unknown[];

const isContainer = (value: unknown): value is Container => typeof value === 'object' && value !== null;

/** A container's members in one state of the object: its copy in `states`, or itself when none was made. */
const stateOf = (container: Container, states: ReadonlyMap<object, object>): Container =>
  (states.get(container) as Container | undefined) ?? container;

/** A copy of `value` as it stood in the state `states` describes, all the way down. */
function copyIn(value: unknown, states: ReadonlyMap<object, object>): unknown {
  if (!isContainer(value)) return value;
  const state = stateOf(value, states);
  if (Array.isArray(state)) return state.map((item) => copyIn(item, states));
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(state)) {
    setMember(copy, key, copyIn(state[key], states));
  }
  return copy;
}

/**
 * The parts of `value` (in the state `states` describes) that a diff along `node` reads: a copy all the way
 * down at a written place or an array (diff-written.ts compares those whole), the members on the way to the
 * written places elsewhere.
 */
function along(value: unknown, node: WrittenNode, states: ReadonlyMap<object, object>): unknown {
  if (!isContainer(value)) return value;
  const state = stateOf(value, states);
  if (node.writer !== undefined || !node.firstChild || Array.isArray(state)) return copyIn(value, states);
  const out: Record<string, unknown> = {};
  for (let child: WrittenNode | undefined = node.firstChild; child; child = child.nextSibling) {
    if (!Object.hasOwn(state, child.key)) continue;
    setMember(out, child.key, along(state[child.key], child, states));
  }
  return out;
}

/**
 * The places `session` wrote, as a tree of their own. Each place already remembers its node in the review's
 * tree (WrittenPaths.recordAt), so this one is found through a map of its own, each place's node made once.
 */
function pathsOf(session: TrackedSession<object>): WrittenPaths {
  const paths = new WrittenPaths();
  const nodes = new Map<ContainerPlace, WrittenNode>();
  const nodeOf = (place: ContainerPlace): WrittenNode => {
    let node = nodes.get(place);
    if (!node) nodes.set(place, (node = place.parent ? nodeOf(place.parent).child(place.key) : paths.tree));
    return node;
  };
  session.forEachWrite((place, key) => nodeOf(place).child(key).mark(''));
  return paths;
}

export class WriteHistory {
  private readonly sessions: Array<TrackedSession<object>> = [];
  private root: object | undefined;
  private review: ReviewWrites | undefined;
  private patchesOf: Array<readonly JsonPatchOperation[]> | undefined;

  /**
   * A session on the working copy, in the order they ran, each once it is over: every one, whether its writes
   * stay, are rolled back or there were none (the copies the working copy made in its place while it ran stay,
   * and earlier steps' values are found again through them). Its number, for `patchOf`.
   */
  add(session: TrackedSession<object>): number {
    return this.sessions.push(session) - 1;
  }

  /**
   * The working copy's root once the phase is over: the state every session's patch is worked back from. With
   * `review`, given only when no step overwrote another's write, a session's patch is its share of the review's
   * (split-patch.ts) whenever that is plain and each step had one session: nothing is worked back then.
   */
  finish(root: object, review?: ReviewWrites): void {
    this.root = root;
    this.review = review;
  }

  /** The patch of the session numbered `index`: from the object as it found it to the object as it left it. */
  patchOf(index: number): readonly JsonPatchOperation[] {
    return (this.patchesOf ??= this.patches())[index] ?? [];
  }

  private patches(): Array<readonly JsonPatchOperation[]> {
    const { root, sessions } = this;
    const shares = this.review && this.shares(this.review);
    if (shares) return shares;
    const patches = sessions.map((): readonly JsonPatchOperation[] => []);
    if (!root) return patches;
    const states = new Map<object, object>();
    for (let i = sessions.length - 1; i >= 0; i--) {
      const session = sessions[i]!;
      const paths = pathsOf(session);
      // Until a later session is worked back, the object is as this one left it: read in place.
      const after = states.size === 0 ? root : along(root, paths.tree, states);
      session.unapplyTo(states);
      const before = along(root, paths.tree, states);
      patches[i] = diffWritten(before as object, after as object, paths);
    }
    return patches;
  }

  /** Each session's share of the review's patch; undefined unless each owner had one session and it is plain. */
  private shares(review: ReviewWrites): Array<readonly JsonPatchOperation[]> | undefined {
    const owners = new Set<string>();
    for (const session of this.sessions) {
      if (owners.has(session.owner)) return undefined;
      owners.add(session.owner);
    }
    const byWriter = splitByWriter(review.patch, review.written);
    return (
      byWriter &&
      this.sessions.map((session) => {
        const share = byWriter.get(session.owner);
        if (!share) return [];
        if (share.length < 2 || inOnePlaceOf(session.owner, share, review.written)) return share;
        return inWriteOrder(share, pathsOf(session).tree, this.root);
      })
    );
  }
}
