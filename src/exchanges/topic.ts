import { DestinationSet } from './destination-set.js';
import type { Binding, ExchangeRouter } from './types.js';

/**
 * Splits a key into its dot-separated words as RabbitMQ does: `""` has no words, `"a."` has two
 * (`"a"` and `""`), so empty words are words like any other.
 */
export function topicWords(key: string): string[] {
  return key === '' ? [] : key.split('.');
}

class TrieNode {
  readonly children = new Map<string, TrieNode>();
  star: TrieNode | undefined;
  hash: TrieNode | undefined;
  readonly destinations = new DestinationSet();
  /** The step of the route pass that last collected this node, so each is collected once. */
  mark = 0;

  constructor(
    readonly parent: TrieNode | undefined,
    /** The binding word leading here: a literal, `*` or `#`. */
    readonly word: string,
  ) {}

  get isEmpty(): boolean {
    return (
      this.children.size === 0 &&
      this.star === undefined &&
      this.hash === undefined &&
      this.destinations.size === 0
    );
  }
}

/**
 * Topic: binding keys are dot-separated patterns where `*` matches exactly one word and `#` zero or
 * more. Bindings share a trie of their words, and a route walks it as an automaton, one routing-key
 * word at a time with the set of live trie nodes, each node visited at most once per word: the
 * cost is O(words × live nodes) however many bindings there are, and several `#` never explode.
 */
export class TopicRouter implements ExchangeRouter {
  readonly #root = new TrieNode(undefined, '');
  #step = 0;
  /** Live nodes before and after the current word; reused so a route allocates no arrays. */
  #current: TrieNode[] = [];
  #next: TrieNode[] = [];

  add(_id: string, binding: Binding): void {
    let node = this.#root;
    for (const word of topicWords(binding.routingKey)) {
      let child: TrieNode | undefined;
      if (word === '*') child = node.star ??= new TrieNode(node, word);
      else if (word === '#') child = node.hash ??= new TrieNode(node, word);
      else {
        child = node.children.get(word);
        if (!child) node.children.set(word, (child = new TrieNode(node, word)));
      }
      node = child;
    }
    node.destinations.add(binding.destination);
  }

  remove(_id: string, binding: Binding): void {
    let node: TrieNode | undefined = this.#root;
    for (const word of topicWords(binding.routingKey)) {
      node = word === '*' ? node.star : word === '#' ? node.hash : node.children.get(word);
      if (!node) return;
    }
    node.destinations.delete(binding.destination);
    // Prune the branch that no binding uses any more.
    while (node.parent && node.isEmpty) {
      const parent: TrieNode = node.parent;
      if (node.word === '*') parent.star = undefined;
      else if (node.word === '#') parent.hash = undefined;
      else parent.children.delete(node.word);
      node = parent;
    }
  }

  route(routingKey: string, _headers: unknown, out: Set<string>): void {
    let current = this.#current;
    let next = this.#next;
    let live = this.#collect(this.#root, current, 0, ++this.#step);
    for (const word of topicWords(routingKey)) {
      const step = ++this.#step;
      let count = 0;
      for (let i = 0; i < live; i++) {
        const node = current[i]!;
        // A `#` node stays live: it swallows any number of further words.
        if (node.word === '#') count = this.#collect(node, next, count, step);
        const child = node.children.get(word);
        if (child) count = this.#collect(child, next, count, step);
        if (node.star) count = this.#collect(node.star, next, count, step);
      }
      const swap = current;
      current = next;
      next = swap;
      live = count;
      if (live === 0) return;
    }
    for (let i = 0; i < live; i++) current[i]!.destinations.addTo(out);
  }

  /**
   * Writes a node into `into` at `count` and, since `#` may match zero words, the `#` nodes right
   * below it; returns the new count. Nodes already collected at this step are skipped.
   */
  #collect(node: TrieNode, into: TrieNode[], count: number, step: number): number {
    for (let n: TrieNode | undefined = node; n && n.mark !== step; n = n.hash) {
      n.mark = step;
      into[count++] = n;
    }
    return count;
  }
}
