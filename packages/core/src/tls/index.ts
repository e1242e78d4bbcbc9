export * from "./EdgeTls.ts"
