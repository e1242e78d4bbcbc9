/** Where a barrel's name comes from: a whole module as a namespace, or one export of a module. */
export type BarrelExport = { readonly namespace: string } | { readonly from: string }
export declare const barrelExports: (root: string, specifier: string) => Map<string, BarrelExport> | undefined
export declare const importModules: (
  source: string,
  exportsOf: (specifier: string) => ReadonlyMap<string, BarrelExport> | undefined
) => string
export declare const effectModules: (root: string) => import("esbuild").Plugin
