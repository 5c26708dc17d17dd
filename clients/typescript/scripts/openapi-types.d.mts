export declare const HEADER: string;
export declare function schemaTypes(document: object): Promise<string>;
export declare function fetchDocument(baseUrl: string): Promise<object>;
