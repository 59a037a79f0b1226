/**
 * Byte copying for hot paths. Node 20's optimizing compiler inlines a typed array's `length` but
 * not its other accessors (`byteLength`, `byteOffset`, `buffer`) nor a method lookup such as
 * `.set`: each is a generic property load, about 12 ns, as long as the copy of a small body
 * itself. Hot paths therefore read `length` (equal to `byteLength` for bytes) and copy with
 * {@link copyInto}, whose method is looked up once.
 */
const typedArraySet = Uint8Array.prototype.set;

/** Copies `source` into `target` at `offset` (as `target.set(source, offset)`). */
export function copyInto(target: Uint8Array, source: Uint8Array, offset: number): void {
  typedArraySet.call(target, source, offset);
}
