class M:
    def forward(self, x)
        return x


value = [1, 2
