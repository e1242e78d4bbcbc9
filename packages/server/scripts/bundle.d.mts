/** The repository root. */
export declare const root: string
/** Each binary `start.mjs` runs: its entry and its bundle, relative to `root`. */
export declare const binaries: Record<"server" | "node", { readonly entry: string; readonly bundle: string }>
/** What a bundle was built from: its sources (relative to `root`) and when the build started (epoch ms). */
export interface Manifest {
  readonly builtAt: number
  readonly sources: ReadonlyArray<string>
}
/** esbuild's options for a bundle of hostplane's sources (`entryPoints` and `outfile` aside). */
export declare const buildOptions: import("esbuild").BuildOptions
export declare const bundle: (name: "server" | "node") => Promise<string>
export declare const outdated: (manifest: Manifest) => boolean
export declare const isStale: (name: "server" | "node") => boolean
export declare const fresh: (name: "server" | "node") => Promise<string>
