# Columns count characters: the error after "héllo" is at column 21 (byte column 22).
greeting = "héllo" +
